"""Makes vkformer's reference for attention heads whose width is set apart from
hidden_size / num_attention_heads (tests/hf/llama/head_dim/ and head_dim_references.json)
with real `transformers`: a random MistralForCausalLM with head_dim 24 on hidden_size 64
over 4 heads (the attention 96 wide, wider than the model; Mistral NeMo's 128 on 5120 over
32 is the same departure: transformers 4.43 added MistralConfig.head_dim), grouped-query
attention (2 K/V heads), untied embeddings. The format is make_llama_references.py's, so
tests/model/llama_test.cpp reads it alike.

Run with transformers 4.43 (and its tokenizers 0.19, huggingface_hub, safetensors) ahead
of the packages make_llama_references.py uses, on Debian's torch (no sdpa: eager attention):

  PYTHONPATH=/path/to/transformers-4.43:/path/to/site-packages /usr/bin/python3 tools/hf_references/make_head_dim_references.py
"""
import json
import sys
from pathlib import Path

import torch
from transformers import MistralConfig, MistralForCausalLM

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_llama_references import OUT, VOCAB, randomised, saved_with_references  # noqa: E402


def main():
    torch.manual_seed(7)
    cfg = MistralConfig(vocab_size=VOCAB, hidden_size=64, intermediate_size=88, num_hidden_layers=2,
                        num_attention_heads=4, num_key_value_heads=2, head_dim=24, max_position_embeddings=64,
                        sliding_window=None, rms_norm_eps=1e-5, bos_token_id=1, eos_token_id=2,
                        tie_word_embeddings=False, attn_implementation="eager")
    model = randomised(MistralForCausalLM(cfg), 7)
    assert model.model.layers[0].self_attn.q_proj.weight.shape == (96, 64)
    refs = saved_with_references(model, "head_dim")
    with open(OUT / "head_dim_references.json", "w") as f:
        json.dump(refs, f)
    print("wrote", OUT / "head_dim")


if __name__ == "__main__":
    main()
