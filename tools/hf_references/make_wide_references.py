"""Makes vkformer's 256-wide references (tests/hf/wide/) with real `transformers`: models
whose every linear weight has rows of whole 32-value blocks, so that weights in
llama.cpp's blocks (`--weights`) can be checked against transformers' fp32 outputs.

  tests/hf/wide/llama/   a random LlamaForCausalLM, hidden 256, FFN 768, 2 layers, 8 heads
                         (2 K/V heads), tied embeddings (SmolLM's layout), with the Llama 3
                         tokenizer of tests/hf/llama/tokenizer_llama3 (359 tokens)
  tests/hf/wide/gpt2/    a random GPT2LMHeadModel, n_embd 256, n_inner 768, 2 layers, 8
                         heads, with tests/hf/gpt2/lm's tokenizer (357 tokens)
  tests/hf/wide/marian/  a random MarianMTModel, d_model 256, FFN 768, 1 encoder and 1 decoder
                         layer, 8 heads, tests/hf/marian's tokenizer and settings (180 tokens)
  tests/hf/wide/bart/    a random BartForConditionalGeneration of the same size, tests/hf/bart's
                         tokenizer and settings (561 tokens)
  tests/hf/wide/references.json
                         per decoder-only model: prompts (token ids), transformers' fp32 logits at every
                         position of the prompt and its greedy continuation (the sequence
                         scored as one input), and that greedy continuation; and per block
                         type (q8_0, q5_1, q5_0, q4_1, q4_0, q4_k, q5_k, q6_k) and mix
                         (q4_k_m, q5_k_m: decoder-only models) the same for the first prompt
                         with every linear weight and the token embedding quantized and
                         dequantized by llama.cpp's reference quantizers (the `gguf`
                         package's for the 32-value types; for K-quants, which gguf does not
                         quantize, llama.cpp's own ggml_quantize_chunk from a libggml-base.so
                         built by hand outside this repository, named by VKF_GGML_LIB), and
                         dequantized by gguf, as vkformer's --weights stores them (each
                         tensor in llama-quantize's type for it: vkformer stores a stacked
                         weight's v apart where the mix gives it more bits than q and k)
                         (GPT-2's Conv1D weights in blocks along their input, as vkformer
                         stores them transposed; positions, norms and biases as they are);
                         per encoder-decoder: sources and teacher-forced targets, and their
                         logits in fp32 and per block type (greedy decoding is left to the
                         tiny references' generate() checks: their settings differ by family)

Weights are drawn as make_llama_references.py draws them (scaled up so that logits are
apart by about one), rounded to fp16 and saved so (the files stay small); the references
are computed in fp32 from those rounded weights, so a model loaded in fp32 has exactly
them. Run with transformers 4.36.2 on Debian's torch:

  VKF_GGML_LIB=/path/to/libggml-base.so PYTHONPATH=/path/to/site-packages \
      /usr/bin/python3 tools/hf_references/make_wide_references.py
"""
import ctypes
import json
import os
import shutil
from pathlib import Path

import numpy as np
import torch
import transformers
from gguf import GGMLQuantizationType, quants
from transformers import (BartConfig, BartForConditionalGeneration, GPT2Config, GPT2LMHeadModel, LlamaConfig,
                          LlamaForCausalLM, MarianConfig, MarianMTModel)

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "tests" / "hf" / "wide"
NEW_TOKENS = 12
TYPES = ("Q8_0", "Q5_1", "Q5_0", "Q4_1", "Q4_0", "Q4_K", "Q5_K", "Q6_K")
K_BYTES = {"Q4_K": 144, "Q5_K": 176, "Q6_K": 210}
GGML = None


def quantize_dequantize(rows, name):
    """rows [n, k] through llama.cpp's reference quantizer of type `name` and back."""
    t = getattr(GGMLQuantizationType, name)
    if name not in K_BYTES:
        return quants.dequantize(quants.quantize(rows, t), t)
    global GGML
    if GGML is None:
        GGML = ctypes.CDLL(os.environ["VKF_GGML_LIB"])
        GGML.ggml_quantize_chunk.restype = ctypes.c_size_t
        GGML.ggml_quantize_chunk.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64,
                                             ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p]
    x = np.ascontiguousarray(rows, np.float32)
    dst = np.zeros(x.size // 256 * K_BYTES[name], np.uint8)
    GGML.ggml_quantize_chunk(int(t), x.ctypes.data, dst.ctypes.data, 0, x.shape[0], x.shape[1], None)
    return quants.dequantize(dst.reshape(-1, K_BYTES[name]), t).reshape(x.shape)


def fallback(name, cols):
    """llama.cpp's type for rows of `cols` values when `name` is asked for (None: unquantized)."""
    if cols % 32:
        return None
    if name in K_BYTES and cols % 256:
        return {"Q4_K": "Q5_0", "Q5_K": "Q5_1", "Q6_K": "Q8_0"}[name]
    return name


def mix_type(mix, param, layers, cols):
    """llama.cpp's Q4_K_M / Q5_K_M choice for a decoder-only model's weight (docs/models.md)."""
    base = "Q4_K" if mix == "Q4_K_M" else "Q5_K"
    if "wte" in param or "embed_tokens" in param or "lm_head" in param:  # tied in these models: the output's type
        return "Q8_0" if cols % 256 else "Q6_K"
    if "c_attn" in param:
        return fallback("Q5_K" if mix == "Q4_K_M" else "Q6_K", cols)
    layer = int([p for p in param.split(".") if p.isdigit()][0])
    more = layer < layers // 8 or layer >= 7 * layers // 8 or (layer - layers // 8) % 3 == 2
    if more and any(k in param for k in ("v_proj", "down_proj", "mlp.c_proj")):
        return fallback("Q6_K", cols)
    return fallback(base, cols)


def randomised(model, seed, scale, keep=()):
    torch.manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if any(k in name for k in keep):
                continue
            if "norm" in name or "ln_" in name:
                p.copy_(1 + 0.3 * torch.randn_like(p))
            else:
                p.mul_(scale)
            p.copy_(p.half().float())  # as saved
    return model.eval()


def reference(model, ids, digits):
    with torch.no_grad():
        greedy = model.generate(torch.tensor([ids]), max_new_tokens=NEW_TOKENS, min_new_tokens=NEW_TOKENS,
                                do_sample=False, pad_token_id=0)[0, len(ids):].tolist()
        seq = ids + greedy[:-1]
        logits = model(torch.tensor([seq])).logits[0].double()
    return {"ids": ids, "greedy": greedy, "scored": seq, "logits": [round(float(x), digits) for x in logits.flatten()]}


def references(model, vocab, seed, conv1d):
    g = torch.Generator().manual_seed(seed)
    prompts = [[int(x) for x in torch.randint(3, vocab, (n,), generator=g)] for n in (6, 20)]
    out = {"fp32": [reference(model, ids, 6) for ids in prompts], "blocks": {}}
    original = {n: p.detach().clone() for n, p in model.named_parameters()}
    layers = model.config.num_hidden_layers
    for name in TYPES + ("Q4_K_M", "Q5_K_M"):
        if name.endswith("_M"):
            quantized(model, lambda n, cols: mix_type(name, n, layers, cols), conv1d)
        else:
            quantized(model, lambda n, cols: fallback(name, cols), conv1d)
        out["blocks"][name.lower()] = reference(model, prompts[0], 5)
        with torch.no_grad():
            for n, p in model.named_parameters():
                p.copy_(original[n])
    return out


def quantized(model, type_of, conv1d):
    """The model's 2-D weights (not positions) quantized and dequantized, in place, each
    with the type type_of(name, cols) gives (None: left as it is)."""
    with torch.no_grad():
        for n, p in model.named_parameters():
            w = p.detach().numpy()
            if w.ndim != 2 or "wpe" in n or "embed_positions" in n:
                continue
            along_input = conv1d and "wte" not in n  # Conv1D [in, out]: blocks along its input
            rows = w.T.copy() if along_input else w
            t = type_of(n, rows.shape[1])
            if t is None:
                continue
            q = quantize_dequantize(rows.astype(np.float32), t)
            p.copy_(torch.from_numpy(q.T.copy() if along_input else q))


def seq2seq_references(model, vocab, seed):
    g = torch.Generator().manual_seed(seed)
    start = model.config.decoder_start_token_id
    sources = [[int(x) for x in torch.randint(3, vocab - 2, (n,), generator=g)] for n in (7, 12)]
    targets = [[start] + [int(x) for x in torch.randint(3, vocab - 2, (n,), generator=g)] for n in (8, 5)]

    def logits(digits):
        out = []
        with torch.no_grad():
            for src, tgt in zip(sources, targets):
                out.append([round(float(x), digits)
                            for x in model(input_ids=torch.tensor([src]), decoder_input_ids=torch.tensor([tgt])).logits[0].flatten()])
        return out

    refs = {"sources": sources, "targets": targets, "fp32": logits(6), "blocks": {}}
    original = {n: p.detach().clone() for n, p in model.named_parameters()}
    for name in TYPES:
        quantized(model, lambda n, cols: fallback(name, cols), conv1d=False)
        refs["blocks"][name.lower()] = logits(5)
        with torch.no_grad():
            for n, p in model.named_parameters():
                p.copy_(original[n])
    return refs


def seq2seq(name, cls, config_cls, src_dir, seed, refs):
    cfg = json.load(open(src_dir / "config.json"))
    cfg.update(d_model=256, encoder_layers=1, decoder_layers=1, num_hidden_layers=1, encoder_attention_heads=8,
               decoder_attention_heads=8, encoder_ffn_dim=768, decoder_ffn_dim=768)
    torch.manual_seed(seed)
    model = cls(config_cls(**{k: v for k, v in cfg.items() if k not in ("architectures", "transformers_version")}))
    # (Marian's sinusoidal positions stay as computed: vkformer computes them, not reads them)
    randomised(model, seed, 4.0, keep=("embed_positions",) if name == "marian" else ())
    with torch.no_grad():
        if hasattr(model, "final_logits_bias"):
            model.final_logits_bias.copy_((0.5 * torch.randn(model.final_logits_bias.shape)).half().float())
    refs["models"][name] = seq2seq_references(model, cfg["vocab_size"], seed)
    files = [f.name for f in src_dir.iterdir() if f.name not in ("config.json", "model.safetensors")]
    save(model, name, src_dir, files)


def save(model, name, tokenizer_dir, files):
    out = OUT / name
    if out.exists():
        shutil.rmtree(out)
    model.half().save_pretrained(out)
    model.float()
    for f in files:
        shutil.copy(tokenizer_dir / f, out / f)


def main():
    refs = {"transformers_version": transformers.__version__, "new_tokens": NEW_TOKENS, "models": {}}
    llama_tok = ROOT / "tests" / "hf" / "llama" / "tokenizer_llama3"
    vocab = json.load(open(ROOT / "tests" / "hf" / "llama" / "with_tokenizer" / "config.json"))["vocab_size"]
    torch.manual_seed(21)
    llama = LlamaForCausalLM(LlamaConfig(vocab_size=vocab, hidden_size=256, intermediate_size=768, num_hidden_layers=2,
                                         num_attention_heads=8, num_key_value_heads=2, max_position_embeddings=128,
                                         rms_norm_eps=1e-5, bos_token_id=1, eos_token_id=2, tie_word_embeddings=True))
    randomised(llama, 21, 4.0)
    refs["models"]["llama"] = references(llama, vocab, 21, conv1d=False)
    save(llama, "llama", llama_tok, ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"))

    gpt2_tok = ROOT / "tests" / "hf" / "gpt2" / "lm"
    vocab = json.load(open(gpt2_tok / "config.json"))["vocab_size"]
    torch.manual_seed(22)
    gpt2 = GPT2LMHeadModel(GPT2Config(vocab_size=vocab, n_embd=256, n_inner=768, n_layer=2, n_head=8, n_positions=128,
                                      bos_token_id=0, eos_token_id=0))
    randomised(gpt2, 22, 4.0)
    refs["models"]["gpt2"] = references(gpt2, vocab, 22, conv1d=True)
    save(gpt2, "gpt2", gpt2_tok, ("vocab.json", "merges.txt", "tokenizer_config.json", "special_tokens_map.json"))

    seq2seq("marian", MarianMTModel, MarianConfig, ROOT / "tests" / "hf" / "marian", 23, refs)
    seq2seq("bart", BartForConditionalGeneration, BartConfig, ROOT / "tests" / "hf" / "bart", 24, refs)

    with open(OUT / "references.json", "w") as f:
        json.dump(refs, f)
    print("wrote", OUT)


if __name__ == "__main__":
    main()
