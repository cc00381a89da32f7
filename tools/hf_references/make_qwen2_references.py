"""Makes vkformer's Qwen2 reference (tests/hf/llama/qwen2/ and qwen2_references.json)
with real `transformers`: a random Qwen2ForCausalLM saved by save_pretrained, Llama's
layout plus biases on the query, key and value projections, with grouped-query attention
(4 heads over 2 K/V heads), untied embeddings and rope_theta 1000000 (Qwen2's). The
references have the format of make_llama_references.py's (the same prompts, logits at
every position, greedy continuations with and without the repetition penalty), so
tests/model/llama_test.cpp reads both alike.

It also writes tests/hf/llama/tokenizer_qwen2/: Qwen2's tokenizer.json as
Qwen2TokenizerFast saves it (an NFC normalizer, Qwen2's split pattern, byte-level BPE;
tests/hf/gpt2's vocabulary and merges, <|endoftext|> added), and per sentence of
tests/hf/sentences.txt and some that NFC changes, the fast tokenizer's ids and decoded
text, which the slow Qwen2Tokenizer must agree with.

transformers 4.37 added Qwen2 (4.36.2, which made the Llama references, lacks it). Run
with transformers 4.37.2 ahead of the packages make_llama_references.py uses:

  PYTHONPATH=/path/to/transformers-4.37:/path/to/site-packages /usr/bin/python3 tools/hf_references/make_qwen2_references.py
"""
import json
import shutil
import sys
from pathlib import Path

import torch
from transformers import Qwen2Config, Qwen2ForCausalLM

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_llama_references import OUT, VOCAB, randomised, saved_with_references  # noqa: E402


NFC_CASES = ["e\u0301te\u0301 cafe\u0301", "A\u030a \u212b \u00c5", "\u1100\u1161\u11a8 \uac01", "o\u0308\u0304 \u1e7b",
             "fi \ufb01 \u2126", "x<|endoftext|>e\u0301"]


def make_tokenizer():
    from transformers import Qwen2Tokenizer, Qwen2TokenizerFast
    gpt2 = OUT.parent / "gpt2" / "lm"
    out = OUT / "tokenizer_qwen2"
    if out.exists():
        shutil.rmtree(out)
    fast = Qwen2TokenizerFast(vocab_file=str(gpt2 / "vocab.json"), merges_file=str(gpt2 / "merges.txt"))
    fast.save_pretrained(out)
    for f in ("vocab.json", "merges.txt"):  # tokenizer.json alone: what vkformer must read
        (out / f).unlink()
    (out / "config.json").write_text(json.dumps(
        {"model_type": "qwen2", "vocab_size": 360, "hidden_size": 8, "intermediate_size": 8, "num_hidden_layers": 0,
         "num_attention_heads": 1, "max_position_embeddings": 8}))
    slow = Qwen2Tokenizer(vocab_file=str(gpt2 / "vocab.json"), merges_file=str(gpt2 / "merges.txt"))
    sentences = (OUT.parent / "sentences.txt").read_text(encoding="utf-8").split("\n")[:-1] + NFC_CASES
    ids = [fast(s)["input_ids"] for s in sentences]
    slow_ids = [slow(s)["input_ids"] for s in sentences]
    return {"sentences": sentences, "ids": ids, "decoded": [fast.decode(i, skip_special_tokens=True) for i in ids],
            "slow_differs_on": [s for s, a, b in zip(sentences, ids, slow_ids) if a != b]}


def main():
    torch.manual_seed(5)
    cfg = Qwen2Config(vocab_size=VOCAB, hidden_size=64, intermediate_size=88, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64, rope_theta=1000000.0,
                      rms_norm_eps=1e-6, bos_token_id=1, eos_token_id=2, tie_word_embeddings=False,
                      use_sliding_window=False, sliding_window=32)
    model = randomised(Qwen2ForCausalLM(cfg), 5)
    with torch.no_grad():  # biases of the size of the weights' products, so the test sees them
        for layer in model.model.layers:
            for proj in (layer.self_attn.q_proj, layer.self_attn.k_proj, layer.self_attn.v_proj):
                proj.bias.copy_(torch.randn_like(proj.bias))
    refs = saved_with_references(model, "qwen2")
    refs["tokenizer_qwen2"] = make_tokenizer()
    with open(OUT / "qwen2_references.json", "w") as f:
        json.dump(refs, f)
    print("wrote", OUT / "qwen2")


if __name__ == "__main__":
    main()
