"""Makes vkformer's Llama-family references (tests/hf/llama/) with real `transformers`:

  tests/hf/llama/gqa/      a random LlamaForCausalLM saved by save_pretrained: grouped-
                           query attention (4 heads, 2 K/V heads), untied embeddings,
                           rope_theta 500000 and linear rope scaling (factor 2)
  tests/hf/llama/tied/     SmolLM's layout in small: 3 heads, 1 K/V head, tied embeddings
                           (lm_head dropped from the file), the default rope_theta
  tests/hf/llama/bf16/     gqa's weights saved in bfloat16
  tests/hf/llama/mistral/  a random MistralForCausalLM whose sliding_window (32) is below
                           its max_position_embeddings (64)
  tests/hf/llama/overflow/ the tied model with its first MLP's down projection scaled up so
                           that its residual stream passes fp16's range (65504) while its
                           fp32 logits stay finite (RMSNorm scales them back)
  tests/hf/llama/tokenizer_bytelevel/, tokenizer_llama3/
                           tokenizer.json files as the `tokenizers` library writes them (a
                           config.json beside each names a Llama of 360 tokens): GPT-2's
                           byte-level BPE (tests/hf/gpt2's vocabulary and merges), and the
                           same vocabulary under Llama 3's layout (its split pattern, then
                           byte-level, <|begin_of_text|> before every text)
  tests/hf/llama/references.json
                           per model: prompts (token ids, used as given), their logits at
                           every position, and greedy generate() continuations with and
                           without a repetition penalty; per tokenizer, the ids of
                           tests/hf/sentences.txt and their decoded text

Random weights are scaled up from Llama's initialisation (std 0.02 gives logits within
1e-3 of each other, where greedy decoding is a coin toss) and the RMSNorm weights are
randomised, so the checks see every weight. transformers 4.36.2 has no llama3 rope
scaling (4.43 added it): that rule is not among these references. Run with transformers
4.36.2 (and its `tokenizers`, `safetensors`, `huggingface_hub`) on Debian's torch:

  PYTHONPATH=/path/to/site-packages /usr/bin/python3 tools/hf_references/make_llama_references.py
"""
import json
import shutil
from pathlib import Path

import torch
import transformers
from transformers import LlamaConfig, LlamaForCausalLM, MistralConfig, MistralForCausalLM

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "tests" / "hf" / "llama"
VOCAB = 300
PROMPTS = [[5, 17, 9], [42], [7, 7, 7, 7, 7, 7],
           [int(x) for x in torch.randint(0, VOCAB, (20,), generator=torch.Generator().manual_seed(3))]]
NEW_TOKENS = 12
PENALTY = 1.5


def randomised(model, seed):
    torch.manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name:
                p.copy_(1 + 0.3 * torch.randn_like(p))
            else:
                p.mul_(8.0)  # std 0.16: logits apart by ~1
    return model.eval()


def llama(seed, **config):
    torch.manual_seed(seed)
    cfg = LlamaConfig(vocab_size=VOCAB, max_position_embeddings=64, rms_norm_eps=1e-5, bos_token_id=1,
                      eos_token_id=2, **config)
    return randomised(LlamaForCausalLM(cfg), seed)


def references(model):
    out = []
    with torch.no_grad():
        for ids in PROMPTS:
            x = torch.tensor([ids])
            logits = model(x).logits[0].float()
            gen = model.generate(x, max_new_tokens=NEW_TOKENS, do_sample=False, pad_token_id=0)[0, len(ids):]
            penalised = model.generate(x, max_new_tokens=NEW_TOKENS, do_sample=False, repetition_penalty=PENALTY,
                                       pad_token_id=0)[0, len(ids):]
            out.append({"ids": ids, "logits": logits.flatten().tolist(), "greedy": gen.tolist(),
                        "greedy_repetition_penalty": penalised.tolist()})
    return out


def saved_with_references(model, name):
    """Saves `model` to tests/hf/llama/<name> and returns its references file's contents in
    this script's format (make_qwen2_references.py and make_llama3_references.py use it)."""
    out = OUT / name
    if out.exists():
        shutil.rmtree(out)
    model.save_pretrained(out)
    return {"transformers_version": transformers.__version__, "new_tokens": NEW_TOKENS, "repetition_penalty": PENALTY,
            "models": {name: references(model)}}


LLAMA3_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
                  r"|\s*[\r\n]+|\s+(?!\S)|\s+")


def make_tokenizers():
    """tokenizer.json files, and what transformers' fast tokenizers make of the sentences."""
    from tokenizers import Regex, Tokenizer, decoders, pre_tokenizers, processors
    from transformers import GPT2TokenizerFast, PreTrainedTokenizerFast
    sentences = (ROOT / "tests" / "hf" / "sentences.txt").read_text(encoding="utf-8").split("\n")[:-1]
    config = {"model_type": "llama", "vocab_size": 360, "hidden_size": 8, "intermediate_size": 8,
              "num_hidden_layers": 0, "num_attention_heads": 1, "max_position_embeddings": 8}
    out = {}
    fast = GPT2TokenizerFast.from_pretrained(ROOT / "tests" / "hf" / "gpt2" / "lm")
    fast.save_pretrained(OUT / "tokenizer_bytelevel")
    for f in ("vocab.json", "merges.txt"):  # tokenizer.json alone: what vkformer must read
        (OUT / "tokenizer_bytelevel" / f).unlink()
    (OUT / "tokenizer_bytelevel" / "config.json").write_text(json.dumps(config))
    loaded = PreTrainedTokenizerFast.from_pretrained(OUT / "tokenizer_bytelevel")
    out["tokenizer_bytelevel"] = loaded

    tok = Tokenizer.from_str(fast.backend_tokenizer.to_str())
    tok.add_special_tokens(["<|begin_of_text|>", "<|end_of_text|>"])
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(LLAMA3_PATTERN), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=False)])
    tok.decoder = decoders.ByteLevel()
    bos = tok.token_to_id("<|begin_of_text|>")
    tok.post_processor = processors.TemplateProcessing(single="<|begin_of_text|> $A",
                                                       pair="<|begin_of_text|> $A <|begin_of_text|> $B",
                                                       special_tokens=[("<|begin_of_text|>", bos)])
    llama3 = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<|begin_of_text|>", eos_token="<|end_of_text|>",
                                     clean_up_tokenization_spaces=False)
    llama3.save_pretrained(OUT / "tokenizer_llama3")
    (OUT / "tokenizer_llama3" / "config.json").write_text(json.dumps(config))
    out["tokenizer_llama3"] = PreTrainedTokenizerFast.from_pretrained(OUT / "tokenizer_llama3")
    refs = {}
    for name, t in out.items():
        ids = [t(s)["input_ids"] for s in sentences]
        refs[name] = {"sentences": sentences, "ids": ids, "decoded": [t.decode(i, skip_special_tokens=True) for i in ids]}
    return refs


def main():
    if OUT.exists():
        shutil.rmtree(OUT)
    OUT.mkdir(parents=True)
    refs = {"transformers_version": transformers.__version__, "new_tokens": NEW_TOKENS, "repetition_penalty": PENALTY,
            "models": {}}
    gqa = llama(1, hidden_size=64, intermediate_size=88, num_hidden_layers=2, num_attention_heads=4,
                num_key_value_heads=2, rope_theta=500000.0, rope_scaling={"type": "linear", "factor": 2.0},
                tie_word_embeddings=False)
    gqa.save_pretrained(OUT / "gqa")
    refs["models"]["gqa"] = references(gqa)

    tied = llama(2, hidden_size=48, intermediate_size=72, num_hidden_layers=3, num_attention_heads=3,
                 num_key_value_heads=1, tie_word_embeddings=True)
    tied.save_pretrained(OUT / "tied")
    refs["models"]["tied"] = references(tied)

    bf16 = llama(1, hidden_size=64, intermediate_size=88, num_hidden_layers=2, num_attention_heads=4,
                 num_key_value_heads=2, rope_theta=500000.0, rope_scaling={"type": "linear", "factor": 2.0},
                 tie_word_embeddings=False).to(torch.bfloat16)
    bf16.save_pretrained(OUT / "bf16")
    # The rounded weights computed in fp32, loaded as a user loads them: bf16.float() would
    # also keep the rotary tables that .to(bfloat16) rounded (4.36's cos/sin buffers).
    refs["models"]["bf16"] = references(LlamaForCausalLM.from_pretrained(OUT / "bf16", torch_dtype=torch.float32).eval())

    torch.manual_seed(4)
    mcfg = MistralConfig(vocab_size=VOCAB, hidden_size=32, intermediate_size=40, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64, sliding_window=32,
                         rms_norm_eps=1e-5, bos_token_id=1, eos_token_id=2, tie_word_embeddings=False)
    mistral = randomised(MistralForCausalLM(mcfg), 4)
    mistral.save_pretrained(OUT / "mistral")
    refs["models"]["mistral"] = references(mistral)

    over = llama(2, hidden_size=48, intermediate_size=72, num_hidden_layers=3, num_attention_heads=3,
                 num_key_value_heads=1, tie_word_embeddings=True)
    with torch.no_grad():
        over.model.layers[0].mlp.down_proj.weight.mul_(30000.0)
        hidden = over(torch.tensor([PROMPTS[3]]), output_hidden_states=True).hidden_states[1]  # after layer 0
    peak = float(hidden.abs().max())
    assert peak > 2 * 65504, f"the residual stream peaks at {peak}: not past fp16's range"
    over.save_pretrained(OUT / "overflow")
    refs["models"]["overflow"] = references(over)
    refs["overflow_peak"] = peak
    refs["tokenizers"] = make_tokenizers()
    with open(OUT / "references.json", "w") as f:
        json.dump(refs, f)
    print("wrote", OUT)


if __name__ == "__main__":
    main()
