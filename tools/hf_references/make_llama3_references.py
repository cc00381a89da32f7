"""Makes vkformer's reference for Llama 3's rope scaling (tests/hf/llama/llama3/ and
llama3_references.json) with real `transformers`: a random LlamaForCausalLM whose
rope_scaling is {"rope_type": "llama3", ...} (transformers 4.43 added it: the frequency
bands below original_max_position_embeddings / high_freq_factor kept, those above / low
divided by factor, the band between blended), with original_max_position_embeddings 16
so that the short prompts reach every band; grouped-query attention, untied embeddings,
rope_theta 500000. The format is make_llama_references.py's, so tests/model/llama_test.cpp
reads it alike.

Run with transformers 4.43 (and its tokenizers 0.19, huggingface_hub, safetensors) ahead
of the packages make_llama_references.py uses, on Debian's torch (no sdpa: eager attention):

  PYTHONPATH=/path/to/transformers-4.43:/path/to/site-packages /usr/bin/python3 tools/hf_references/make_llama3_references.py
"""
import json
import sys
from pathlib import Path

import torch
from transformers import LlamaConfig, LlamaForCausalLM

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_llama_references import OUT, VOCAB, randomised, saved_with_references  # noqa: E402


def main():
    torch.manual_seed(6)
    cfg = LlamaConfig(vocab_size=VOCAB, hidden_size=64, intermediate_size=88, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64, rope_theta=500000.0,
                      rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                    "high_freq_factor": 4.0, "original_max_position_embeddings": 16},
                      rms_norm_eps=1e-5, bos_token_id=1, eos_token_id=2, tie_word_embeddings=False,
                      attn_implementation="eager")
    refs = saved_with_references(randomised(LlamaForCausalLM(cfg), 6), "llama3")
    with open(OUT / "llama3_references.json", "w") as f:
        json.dump(refs, f)
    print("wrote", OUT / "llama3")


if __name__ == "__main__":
    main()
