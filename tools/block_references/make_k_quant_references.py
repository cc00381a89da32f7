#!/usr/bin/env python3
"""Reference K-quant blocks for tests/ops/blocks_test.cpp: llama.cpp's own quantizer
(ggml_quantize_chunk without an importance matrix, the path llama-quantize takes) on a
fixed set of super-blocks, and the gguf package's dequantization of those blocks, as hex.

The gguf package dequantizes K-quants but does not quantize them, so the blocks come from
a libggml-base.so built by hand outside this repository (its commit goes into the JSON):

    /tmp/gguf/bin/python tools/block_references/make_k_quant_references.py \\
        /path/to/libggml-base.so <llama.cpp commit> tests/ops/k_quant_references.json

Needs PyPI and that library; the tests read the JSON it writes (committed), never either.
"""
import ctypes
import json
import sys

import numpy as np
from gguf import GGMLQuantizationType, quants

TYPES = {"q4_k": GGMLQuantizationType.Q4_K, "q5_k": GGMLQuantizationType.Q5_K, "q6_k": GGMLQuantizationType.Q6_K}
BYTES = {"q4_k": 144, "q5_k": 176, "q6_k": 210}


def values():
    rng = np.random.default_rng(49)
    blocks = [rng.standard_normal((2, 256)).astype(np.float32) * np.float32(s) for s in (1e-6, 1e-3, 0.02, 1.0, 37.0, 1e4)]
    edge = np.zeros((8, 256), np.float32)
    edge[1, :] = 0.75                                        # a constant
    edge[2, 77] = 3.0                                        # one value, the rest zero
    edge[3, :] = np.linspace(-1, 1, 256)                     # evenly spaced
    edge[4, :] = np.abs(rng.standard_normal(256)) + 5        # all positive, far from zero
    edge[5, :] = rng.standard_normal(256) * np.repeat(10.0 ** np.arange(-3, 5), 32)  # sub-blocks 1e-3 .. 1e4
    edge[6, :] = rng.standard_normal(256)
    edge[6, 64:96] = 0                                       # a zero sub-block among others
    edge[7, :] = -np.abs(rng.standard_normal(256))           # all negative
    blocks.append(edge)
    return np.concatenate(blocks).astype(np.float32)


def main(lib_path, commit, path):
    ggml = ctypes.CDLL(lib_path)
    ggml.ggml_quantize_chunk.restype = ctypes.c_size_t
    ggml.ggml_quantize_chunk.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64,
                                         ctypes.c_int64, ctypes.c_void_p]
    x = values()
    out = {"source": "llama.cpp " + commit + " ggml_quantize_chunk (no importance matrix); gguf package dequantize",
           "values": x.reshape(-1).astype("<f4").tobytes().hex(), "blocks": {}, "dequantized": {}}
    for name, qtype in TYPES.items():
        dst = np.zeros(x.shape[0] * BYTES[name], np.uint8)
        ggml.ggml_quantize_chunk(int(qtype), x.ctypes.data, dst.ctypes.data, 0, x.shape[0], 256, None)
        out["blocks"][name] = dst.tobytes().hex()
        back = quants.dequantize(dst.reshape(x.shape[0], BYTES[name]), qtype)
        out["dequantized"][name] = back.astype("<f4").reshape(-1).tobytes().hex()
    with open(path, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3])
