#!/usr/bin/python3
"""Makes golden data from PyTorch for vkformer's model tests.

    /usr/bin/python3 tools/make_goldens.py OUT_DIR [--cases N] [--seed S]

For each case a random torch-seq2seq configuration (post- and pre-norm, ReLU and GELU,
1 to 6 layers a side, 1 to 16 heads, head dims 8 to 128, odd vocabularies, sources of
1 to 200 tokens in padded batches) is built with random weights and exported to
OUT_DIR/case_N, beside golden.json (inputs, greedy and beam outputs) and logits.npy
(teacher-forced logits of the first source).
"""
import argparse
import warnings
import json
import os
import random
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from export import export  # noqa: E402
from seq2seq import Seq2Seq, beam_search, greedy  # noqa: E402


def random_config(rng, case):
    # A few fixed corners first, then random ones.
    corners = [
        dict(nhead=1, head_dim=128, layers=(1, 1)),
        dict(nhead=16, head_dim=8, layers=(2, 2)),
        dict(nhead=4, head_dim=16, layers=(6, 6)),
    ]
    corner = corners[case] if case < len(corners) else None
    nhead = corner["nhead"] if corner else rng.choice([1, 2, 3, 4, 8])
    head_dim = corner["head_dim"] if corner else rng.choice([8, 12, 16, 24, 32, 64])
    enc, dec = corner["layers"] if corner else (rng.randint(1, 3), rng.randint(1, 3))
    return {
        "architecture": "torch-seq2seq",
        "d_model": nhead * head_dim,
        "nhead": nhead,
        "num_encoder_layers": enc,
        "num_decoder_layers": dec,
        "dim_feedforward": rng.choice([16, 40, 64, 100]),
        "activation": rng.choice(["relu", "gelu"]),
        "norm_first": bool(case % 2),
        "layer_norm_eps": rng.choice([1e-5, 1e-6]),
        "src_vocab_size": rng.choice([7, 31, 101, 257]),
        "tgt_vocab_size": rng.choice([5, 29, 97, 263]),
        "max_position": 256,
        "scale_embedding": bool(rng.random() < 0.5),
        "pad_id": 0,
        "bos_id": 1,
        "eos_id": 2,
    }


def main():
    warnings.filterwarnings("ignore")  # torch 1.13: "nested tensors are a prototype"
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--cases", type=int, default=10)
    ap.add_argument("--seed", type=int, default=1234)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    torch.manual_seed(args.seed)
    torch.set_num_threads(1)
    for case in range(args.cases):
        config = random_config(rng, case)
        model = Seq2Seq(config).eval()
        with torch.no_grad():  # spread the logits so greedy choices are clear
            model.generator.weight.mul_(4.0)
        directory = os.path.join(args.out, f"case_{case}")
        export(model, directory)
        V_src, V_tgt = config["src_vocab_size"], config["tgt_vocab_size"]
        long_src = 200 if case == 0 else rng.randint(1, 40)
        lengths = [long_src, 1, rng.randint(2, 20)]
        sources = [[rng.randint(3, V_src - 1) for _ in range(n)] for n in lengths]
        tgt = [config["bos_id"]] + [rng.randint(3, V_tgt - 1) for _ in range(rng.randint(1, 15))]
        with torch.no_grad():
            logits = model(torch.tensor([sources[0]]), torch.tensor([tgt]))[0].numpy().astype(np.float32)
        np.save(os.path.join(directory, "logits.npy"), logits)
        max_new = 10
        golden = {
            "config": config,
            "score": {"src": sources[0], "tgt": tgt, "logits": "logits.npy"},
            "sources": sources,
            "max_new_tokens": max_new,
            "greedy": greedy(model, sources, max_new),
            "greedy_single": [greedy(model, [s], max_new)[0] for s in sources],
            "beam": {"width": 3, "length_penalty": 1.0, "source": sources[2],
                     "ids": beam_search(model, sources[2], 3, max_new, 1.0)},
        }
        with open(os.path.join(directory, "golden.json"), "w") as f:
            json.dump(golden, f, indent=1)
    print(f"wrote {args.cases} golden cases to {args.out}")


if __name__ == "__main__":
    main()
