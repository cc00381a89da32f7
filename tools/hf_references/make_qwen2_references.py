"""Makes vkformer's Qwen2 reference (tests/hf/llama/qwen2/ and qwen2_references.json)
with real `transformers`: a random Qwen2ForCausalLM saved by save_pretrained, Llama's
layout plus biases on the query, key and value projections, with grouped-query attention
(4 heads over 2 K/V heads), untied embeddings and rope_theta 1000000 (Qwen2's). The
references have the format of make_llama_references.py's (the same prompts, logits at
every position, greedy continuations with and without the repetition penalty), so
tests/model/llama_test.cpp reads both alike.

transformers 4.37 added Qwen2 (4.36.2, which made the Llama references, lacks it). Run
with transformers 4.37.2 ahead of the packages make_llama_references.py uses:

  PYTHONPATH=/path/to/transformers-4.37:/path/to/site-packages /usr/bin/python3 tools/hf_references/make_qwen2_references.py
"""
import json
import shutil
import sys
from pathlib import Path

import torch
import transformers
from transformers import Qwen2Config, Qwen2ForCausalLM

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_llama_references import NEW_TOKENS, OUT, PENALTY, VOCAB, randomised, references  # noqa: E402


def main():
    out = OUT / "qwen2"
    if out.exists():
        shutil.rmtree(out)
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
    model.save_pretrained(out)
    refs = {"transformers_version": transformers.__version__, "new_tokens": NEW_TOKENS, "repetition_penalty": PENALTY,
            "models": {"qwen2": references(model)}}
    with open(OUT / "qwen2_references.json", "w") as f:
        json.dump(refs, f)
    print("wrote", out)


if __name__ == "__main__":
    main()
