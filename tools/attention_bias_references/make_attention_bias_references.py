"""Makes tests/ops/attention_bias_references.json: what transformers computes for the two
rules behind vkformer's AttentionBias tables (lib/ops/attention_bias.cpp), for
tests/ops/attention_bias_test.cpp:

  t5     T5Attention._relative_position_bucket over relative positions -1200..1200, for
         an encoder (bidirectional) and a decoder, at T5's defaults (32 buckets, distance
         128) and at two other settings (8 buckets over 20; 64 over 512)
  alibi  the slopes of BLOOM's build_alibi_tensor for 1 to 40 heads (powers of two and
         not)

Needs transformers on Debian's torch (a venv with --system-site-packages; 4.36.2 here):

  /path/to/venv/bin/python tools/attention_bias_references/make_attention_bias_references.py
"""
import json
from pathlib import Path

import torch
import transformers
from transformers.models.bloom.modeling_bloom import build_alibi_tensor
from transformers.models.t5.modeling_t5 import T5Attention

OUT = Path(__file__).resolve().parents[2] / "tests" / "ops" / "attention_bias_references.json"


def main():
    relative = torch.arange(-1200, 1201)
    t5 = []
    for num_buckets, max_distance in ((32, 128), (8, 20), (64, 512)):
        for bidirectional in (True, False):
            buckets = T5Attention._relative_position_bucket(relative, bidirectional=bidirectional,
                                                            num_buckets=num_buckets, max_distance=max_distance)
            t5.append({"num_buckets": num_buckets, "max_distance": max_distance, "bidirectional": bidirectional,
                       "first": -1200, "buckets": buckets.tolist()})
    alibi = {}
    for heads in range(1, 41):
        # build_alibi_tensor gives slope_h * key position for a mask of ones: position 1's is the slope.
        t = build_alibi_tensor(torch.ones(1, 2, dtype=torch.long), heads, torch.float32)  # [heads, 1, 2]
        alibi[str(heads)] = [float(x) for x in t[:, 0, 1]]
    OUT.write_text(json.dumps({"transformers_version": transformers.__version__, "t5": t5, "alibi": alibi}) + "\n")
    print("wrote", OUT)


if __name__ == "__main__":
    main()
