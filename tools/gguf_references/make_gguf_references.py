"""Makes tests/gguf/<model>/ : small random Llama-family checkpoints converted to GGUF by
llama.cpp's own tools, and what transformers computes on them, for
tests/model/gguf_models_test.cpp.

  llama_gqa     LlamaForCausalLM, hidden 256, FFN 256, 1 layer, 4 heads over 2 K/V heads, untied
  llama_tied    the same with 4 K/V heads and the output tied to the embedding
  qwen2         Qwen2ForCausalLM, 4 heads over 2 K/V heads (q, k and v biases), untied
  llama31       llama_gqa's shape with Llama 3.1's rope scaling (rope_type llama3), which
                the converter writes as rope_freqs.weight (F32, F16 and Q4_0 only)
  mistral_head_dim  MistralForCausalLM, llama_gqa's shape with head_dim 96 (the attention
                384 wide on hidden 256), which the converter writes as attention.key_length
                and value_length (transformers 4.43, whose MistralConfig has head_dim)
  gpt2          GPT2LMHeadModel, n_embd 256, 1 layer, 4 heads, tied, the byte-level BPE
                tokenizer of tests/hf/llama/tokenizer_bytelevel (its pre-tokenizer named
                gpt-2 for the converter, which refuses a tokenizer whose hash it has not seen)

Each has a SentencePiece vocabulary of 320 trained here (tokenizer.model: BPE with byte
fallback, no normalisation, spaces kept, as Llama's), which llama.cpp's converter takes
without a pre-tokenizer hash. For each: the checkpoint (save_pretrained,
fp32) to a scratch folder; `convert_hf_to_gguf.py --outtype f32` and `--outtype f16`
(llama.cpp's, from the checkout named by LLAMA_CPP, with its gguf-py); `llama-quantize`
(LLAMA_QUANTIZE) from the F32 file to Q8_0, Q4_0 and Q4_K_M. Committed: the five .gguf
files and references.json: a prompt of 7 random ids, its greedy continuation of 8 and the
logits at every position of prompt + continuation (the sequence scored as one input), from
transformers on the checkpoint (F32) and on the checkpoint with each file's weights
(dequantized by the gguf package from the file, Q's and K's rows put back from llama.cpp's
order for `llama`), in fp32.

Needs transformers on Debian's torch (a venv with --system-site-packages: 4.36.2 for the
Llama models, 4.37.2 for Qwen2, which 4.36 lacks, 4.43 for mistral_head_dim; models named as arguments are made and
merged into references.json), the gguf package and sentencepiece; llama.cpp is checked out and llama-quantize built by hand
outside this repository (nothing here builds it):

  LLAMA_CPP=/path/to/llama.cpp LLAMA_QUANTIZE=/path/to/llama-quantize \\
      /path/to/venv/bin/python tools/gguf_references/make_gguf_references.py
"""
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "tests" / "gguf"
VOCAB = 320
QUANTIZED = {"llama_gqa": ("Q8_0", "Q4_0", "Q4_K_M"), "llama_tied": ("Q8_0", "Q4_0", "Q4_K_M"),
             "qwen2": ("Q8_0", "Q4_0", "Q4_K_M"), "gpt2": ("Q8_0", "Q4_0", "Q4_K_M"), "llama31": ("Q4_0",),
             "mistral_head_dim": ("Q8_0", "Q4_0")}
TEXT = ("The quick brown fox jumps over the lazy dog. A small model reads a file and writes a number.\n"
        "Dates, names and places: Paris in 1998, Lisbon on the third of March, Kyoto at noon.\n") * 40


# llama.cpp's converter, run as it is under Debian's torch 1.13, which lacks the float8 and
# wide unsigned dtypes the converter names in a table of dtypes (these checkpoints hold
# fp32 only): the names are given a stand-in before it runs.
# CONVERT_PRE names the pre-tokenizer where the converter would refuse a small trained
# tokenizer whose hash it has not seen (GPT-2's here): the name it would have found.
CONVERT = """
import os, runpy, sys, torch
for n in ("float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz", "uint16", "uint32", "uint64"):
    if not hasattr(torch, n):
        setattr(torch, n, torch.uint8)
sys.argv = sys.argv[1:]
sys.path.insert(0, os.path.dirname(sys.argv[0]))
if os.environ.get("CONVERT_PRE"):
    import conversion.base
    conversion.base.TextModel.get_vocab_base_pre = lambda self, tokenizer: os.environ["CONVERT_PRE"]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def tokenizer(folder):
    import sentencepiece as spm
    text = Path(folder) / "text.txt"
    text.write_text(TEXT)
    # Llama's settings: BPE with byte fallback, no normalisation, spaces kept as they are.
    spm.SentencePieceTrainer.train(input=str(text), model_prefix=str(Path(folder) / "tokenizer"), vocab_size=VOCAB,
                                   model_type="bpe", byte_fallback=True, bos_id=1, eos_id=2, unk_id=0,
                                   normalization_rule_name="identity", remove_extra_whitespaces=False,
                                   character_coverage=1.0, minloglevel=2)
    text.unlink()
    (Path(folder) / "tokenizer.vocab").unlink()
    (Path(folder) / "tokenizer_config.json").write_text(json.dumps({"add_bos_token": True, "add_eos_token": False}))


def checkpoint(name, folder, seed):
    import transformers
    torch.manual_seed(seed)
    common = dict(vocab_size=VOCAB, hidden_size=256, intermediate_size=256, num_hidden_layers=1,
                  num_attention_heads=4, max_position_embeddings=64, rms_norm_eps=1e-5, bos_token_id=1,
                  eos_token_id=2, rope_theta=10000.0)
    if name == "llama31":  # Llama 3.1's rope scaling, which the converter writes as rope_freqs
        cfg = transformers.LlamaConfig(num_key_value_heads=2, tie_word_embeddings=False,
                                       **dict(common, rope_theta=500000.0, max_position_embeddings=64),
                                       rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                                     "high_freq_factor": 4.0, "original_max_position_embeddings": 16})
        model = transformers.LlamaForCausalLM(cfg)
    elif name == "gpt2":
        cfg = transformers.GPT2Config(vocab_size=357, n_embd=256, n_layer=1, n_head=4, n_positions=64,
                                      bos_token_id=356, eos_token_id=356, tie_word_embeddings=True)
        model = transformers.GPT2LMHeadModel(cfg)
    elif name == "mistral_head_dim":
        cfg = transformers.MistralConfig(num_key_value_heads=2, head_dim=96, sliding_window=None,
                                         tie_word_embeddings=False, **common)
        model = transformers.MistralForCausalLM(cfg)
    elif name == "qwen2":
        cfg = transformers.Qwen2Config(num_key_value_heads=2, tie_word_embeddings=False, **common)
        model = transformers.Qwen2ForCausalLM(cfg)
    else:
        cfg = transformers.LlamaConfig(num_key_value_heads=2 if name == "llama_gqa" else 4,
                                       tie_word_embeddings=name == "llama_tied", **common)
        model = transformers.LlamaForCausalLM(cfg)
    with torch.no_grad():
        for n, p in model.named_parameters():
            if "norm" in n:
                p.copy_(1 + 0.3 * torch.randn_like(p))
            elif "bias" in n:
                p.copy_(0.5 * torch.randn_like(p))
            else:
                p.mul_(8.0)  # logits apart by about one
    model.eval().save_pretrained(folder, safe_serialization=True)
    if name == "gpt2":  # the byte-level BPE tokenizer of tests/hf/llama/tokenizer_bytelevel
        import shutil
        src = ROOT / "tests" / "hf" / "llama" / "tokenizer_bytelevel"
        for f in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
            shutil.copy(src / f, Path(folder) / f)
        config = json.loads((Path(folder) / "config.json").read_text())
        config["n_ctx"] = config["n_positions"]  # (the converter reads n_ctx)
        (Path(folder) / "config.json").write_text(json.dumps(config))
    else:
        tokenizer(folder)
    return model


GPT2_LAYER = {"attn_norm": "ln_1", "attn_qkv": "attn.c_attn", "attn_output": "attn.c_proj", "ffn_norm": "ln_2",
              "ffn_up": "mlp.c_fc", "ffn_down": "mlp.c_proj"}


def gpt2_name(name):
    """transformers' name of a GPT-2 GGUF tensor, and whether it is a Conv1D weight ([in, out] there)."""
    fixed = {"token_embd.weight": "transformer.wte.weight", "position_embd.weight": "transformer.wpe.weight",
             "output_norm.weight": "transformer.ln_f.weight", "output_norm.bias": "transformer.ln_f.bias",
             "output.weight": "lm_head.weight"}
    if name in fixed:
        return fixed[name], False
    _, i, kind, what = name.split(".")
    return f"transformer.h.{i}.{GPT2_LAYER[kind]}.{what}", what == "weight" and "norm" not in kind


def gguf_state(path, model, arch):
    """The model's state dict with every weight as the GGUF file at `path` holds it."""
    sys.path.insert(0, str(Path(os.environ["LLAMA_CPP"]) / "gguf-py"))
    import gguf
    from gguf import GGUFReader
    if arch == "gpt2":
        state = {k: v.clone() for k, v in model.state_dict().items()}
        types = {}
        for t in GGUFReader(path).tensors:
            values = gguf.quants.dequantize(t.data, t.tensor_type).astype(np.float32)
            values = values.reshape([int(x) for x in reversed(t.shape)])
            hf, conv1d = gpt2_name(t.name)
            if conv1d:
                values = values.T  # llama.cpp's [out, in] back to Conv1D's [in, out]
            state[hf] = torch.from_numpy(np.ascontiguousarray(values))
            types[t.tensor_type.name] = types.get(t.tensor_type.name, 0) + 1
        state["lm_head.weight"] = state["transformer.wte.weight"]
        return state, types
    names = {"token_embd.weight": "model.embed_tokens.weight", "output_norm.weight": "model.norm.weight",
             "output.weight": "lm_head.weight"}
    layer = {"attn_norm.weight": "input_layernorm.weight", "attn_q": "self_attn.q_proj", "attn_k": "self_attn.k_proj",
             "attn_v": "self_attn.v_proj", "attn_output.weight": "self_attn.o_proj.weight",
             "ffn_norm.weight": "post_attention_layernorm.weight", "ffn_gate.weight": "mlp.gate_proj.weight",
             "ffn_up.weight": "mlp.up_proj.weight", "ffn_down.weight": "mlp.down_proj.weight"}
    cfg = model.config
    state = {k: v.clone() for k, v in model.state_dict().items()}
    types = {}
    for t in GGUFReader(path).tensors:
        values = gguf.quants.dequantize(t.data, t.tensor_type).astype(np.float32)
        shape = [int(x) for x in reversed(t.shape)]
        values = values.reshape(shape)
        if t.name == "rope_freqs.weight":  # (the model's own rope_scaling computes the same factors)
            types[t.tensor_type.name] = types.get(t.tensor_type.name, 0) + 1
            continue
        if t.name in names:
            hf = names[t.name]
        else:
            _, i, rest = t.name.split(".", 2)
            key = next(k for k in layer if rest.startswith(k))
            hf = f"model.layers.{i}." + layer[key] + rest[len(key):]
        if arch == "llama" and (".q_proj.weight" in hf or ".k_proj.weight" in hf):
            heads = cfg.num_attention_heads if "q_proj" in hf else cfg.num_key_value_heads
            values = values.reshape(heads, values.shape[0] // heads // 2, 2, -1).swapaxes(1, 2).reshape(values.shape)
        state[hf] = torch.from_numpy(np.ascontiguousarray(values))
        types[t.tensor_type.name] = types.get(t.tensor_type.name, 0) + 1
    if cfg.tie_word_embeddings:
        state["lm_head.weight"] = state["model.embed_tokens.weight"]
    return state, types


def reference(model, ids):
    # Greedy by argmax over whole forward passes: no logits processor (generate's
    # min_new_tokens would take the end token out of the running), the end token kept.
    with torch.no_grad():
        seq = list(ids)
        for _ in range(8):
            seq.append(int(model(torch.tensor([seq])).logits[0, -1].argmax()))
        greedy = seq[len(ids):]
        seq = seq[:-1]
        logits = model(torch.tensor([seq])).logits[0].double()
    return {"greedy": greedy, "scored": seq, "logits": [round(float(x), 6) for x in logits.flatten()]}


def main():
    llama_cpp = Path(os.environ["LLAMA_CPP"])
    quantize = os.environ["LLAMA_QUANTIZE"]
    env = dict(os.environ, PYTHONPATH=str(llama_cpp / "gguf-py"))
    commit = subprocess.run(["git", "-C", str(llama_cpp), "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip() or os.environ.get("LLAMA_CPP_COMMIT", "unknown")
    path = OUT / "references.json"
    refs = json.loads(path.read_text()) if path.exists() else {"llama_cpp": commit, "models": {}}
    for seed, name in enumerate(("llama_gqa", "llama_tied", "qwen2", "gpt2", "llama31", "mistral_head_dim")):
        if len(sys.argv) > 1 and name not in sys.argv[1:]:
            continue
        out = OUT / name
        out.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory() as scratch:
            hf = Path(scratch) / "hf"
            model = checkpoint(name, hf, 100 + seed)
            for outtype in ("f32", "f16"):
                subprocess.run([sys.executable, "-c", CONVERT, str(llama_cpp / "convert_hf_to_gguf.py"), str(hf),
                                "--outtype", outtype, "--outfile", str(out / f"{name}.{outtype.upper()}.gguf")],
                               env=dict(env, CONVERT_PRE="gpt-2") if name == "gpt2" else env, check=True,
                               capture_output=True)
            for q in QUANTIZED[name]:
                subprocess.run([quantize, str(out / f"{name}.F32.gguf"), str(out / f"{name}.{q}.gguf"), q], check=True,
                               capture_output=True)
            g = torch.Generator().manual_seed(7 + seed)
            ids = [int(x) for x in torch.randint(3, VOCAB, (7,), generator=g)]
            entry = {"ids": ids, "transformers": reference(model, ids), "files": {}}
            arch = name if name in ("qwen2", "gpt2") else "llama"
            for t in ("F32", "F16") + QUANTIZED[name]:
                state, types = gguf_state(str(out / f"{name}.{t}.gguf"), model, arch)
                m = type(model)(model.config)
                m.load_state_dict(state)
                entry["files"][t] = dict(reference(m.eval(), ids), tensor_types=types)
            entry["transformers"]["version"] = __import__("transformers").__version__
            # The tokenizer the file carries, as transformers' LlamaTokenizer (sentencepiece)
            # reads the checkpoint's tokenizer.model: ids and decoded text of each sentence.
            tok = (__import__("transformers").AutoTokenizer.from_pretrained(str(hf)) if name == "gpt2" else
                   __import__("transformers").LlamaTokenizer.from_pretrained(str(hf), legacy=True))
            entry["tokenizer"] = []
            for text in (ROOT / "tests" / "hf" / "sentences.txt").read_text().splitlines():
                ids_ = tok.encode(text)
                entry["tokenizer"].append({"text": text, "ids": ids_, "decoded": tok.decode(
                    ids_, skip_special_tokens=True, clean_up_tokenization_spaces=False)})
            refs["models"][name] = entry
        print(name, {t: (out / f"{name}.{t}.gguf").stat().st_size for t in ("F32", "F16") + QUANTIZED[name]})
    path.write_text(json.dumps(refs) + "\n")


if __name__ == "__main__":
    main()
