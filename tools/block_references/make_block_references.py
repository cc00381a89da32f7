#!/usr/bin/env python3
"""Reference blocks for tests/ops/blocks_test.cpp, from the gguf package's quants module
(llama.cpp's reference quantizers in numpy): a fixed set of fp32 values (random blocks
at scales from 1e-6 to 1e4, and edge cases: zeros, a constant, one large value, a
negative extreme, values on rounding ties), their blocks in each type and the values the
blocks dequantize to, written as hex so that they compare bit for bit.

    python -m venv /tmp/gguf && /tmp/gguf/bin/pip install gguf numpy
    /tmp/gguf/bin/python tools/block_references/make_block_references.py tests/ops/block_references.json

Needs PyPI; the tests read the JSON it writes (committed), never the package.
"""
import json
import sys

import numpy as np
from gguf import GGMLQuantizationType, quants

TYPES = {"q8_0": GGMLQuantizationType.Q8_0, "q4_0": GGMLQuantizationType.Q4_0, "q4_1": GGMLQuantizationType.Q4_1,
         "q5_0": GGMLQuantizationType.Q5_0, "q5_1": GGMLQuantizationType.Q5_1}


def values():
    rng = np.random.default_rng(47)
    blocks = []
    for scale in (1e-6, 1e-3, 0.02, 1.0, 37.0, 1e4):
        blocks.append(rng.standard_normal((8, 32)).astype(np.float32) * np.float32(scale))
    edge = np.zeros((8, 32), np.float32)
    edge[1, :] = 0.75                                  # a constant
    edge[2, 5] = 3.0                                   # one value, the rest zero
    edge[3, :] = np.linspace(-1, 1, 32)                # evenly spaced: many codes on ties
    edge[4, :] = np.linspace(-8, 7, 32)                # integers: exact codes for Q4_0's d
    edge[5, :] = -np.abs(rng.standard_normal(32))      # the extreme negative
    edge[6, :] = np.abs(rng.standard_normal(32)) + 5   # all positive, far from zero
    edge[7, ::2] = 1.0                                 # two values
    edge[7, 1::2] = -1.0
    blocks.append(edge)
    return np.concatenate(blocks).astype(np.float32)


def main(path):
    x = values()
    out = {"source": "gguf package quants module (llama.cpp's reference quantizers)",
           "values": x.reshape(-1).astype("<f4").tobytes().hex(), "blocks": {}, "dequantized": {}}
    for name, qtype in TYPES.items():
        blocks = quants.quantize(x, qtype)
        out["blocks"][name] = blocks.reshape(-1).tobytes().hex()
        out["dequantized"][name] = quants.dequantize(blocks, qtype).astype("<f4").reshape(-1).tobytes().hex()
    with open(path, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main(sys.argv[1])
