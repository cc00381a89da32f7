#!/usr/bin/python3
"""Greedy decoding speed of a Transformer-base-sized torch-seq2seq (d_model 512, 6+6
layers, FFN 2048, 8 heads, vocabulary 32,000; random weights), in PyTorch and in
vkformer, measured in one run on this machine.

    /usr/bin/python3 tools/bench_transformer_base.py [--tokens 32] [--vkformer build/vkformer] [--precision fp32]

PyTorch's nn.Transformer has no KV cache: its greedy loop re-runs the decoder over the
whole prefix each step, as any user of the module must; vkformer appends to a cache.
"""
import argparse
import json
import os
import subprocess
import sys
import time
import warnings

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from export import export  # noqa: E402
from seq2seq import Seq2Seq, greedy  # noqa: E402

CONFIG = {"architecture": "torch-seq2seq", "d_model": 512, "nhead": 8, "num_encoder_layers": 6,
          "num_decoder_layers": 6, "dim_feedforward": 2048, "activation": "relu", "norm_first": False,
          "layer_norm_eps": 1e-5, "src_vocab_size": 32000, "tgt_vocab_size": 32000, "max_position": 512,
          "scale_embedding": True, "pad_id": 0, "bos_id": 1, "eos_id": 2}


def main():
    warnings.filterwarnings("ignore")
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokens", type=int, default=32)
    ap.add_argument("--source-length", type=int, default=24)
    ap.add_argument("--vkformer", default="build/vkformer")
    ap.add_argument("--precision", default="fp32")
    ap.add_argument("--model-dir", default="build/transformer-base")
    args = ap.parse_args()
    torch.manual_seed(0)
    model = Seq2Seq(CONFIG).eval()
    with torch.no_grad():  # keep EOS out of the way so both decode the full length
        model.generator.bias[CONFIG["eos_id"]] = -1e4
    if not os.path.exists(os.path.join(args.model_dir, "model.safetensors")):
        export(model, args.model_dir)
    src = [[(7 * i) % 31000 + 3 for i in range(args.source_length)]]

    # PyTorch at every thread count up to the core count; the fastest is the baseline.
    torch_runs = {}
    for threads in range(1, (os.cpu_count() or 1) + 1):
        torch.set_num_threads(threads)
        greedy(model, src, 2)  # warm-up
        t0 = time.perf_counter()
        ref = greedy(model, src, args.tokens)[0]
        torch_runs[threads] = len(ref) / (time.perf_counter() - t0)
    best_threads = max(torch_runs, key=torch_runs.get)
    out = subprocess.check_output([args.vkformer, "generate", "--model", args.model_dir, "--src-ids",
                                   ",".join(map(str, src[0])), "--max-new-tokens", str(args.tokens), "--json",
                                   "--precision", args.precision])
    vk = json.loads(out)
    torch_tps = torch_runs[best_threads]
    print(f"Transformer-base greedy decoding, {len(ref)} tokens from a {args.source_length}-token source")
    for threads, tps in torch_runs.items():
        print(f"  PyTorch {torch.__version__} ({threads} threads): {tps:8.1f} tokens/s")
    print(f"  vkformer on {vk['device']} ({args.precision}): {vk['tokens_per_second']:8.1f} tokens/s")
    print(f"  ratio vkformer / PyTorch: {vk['tokens_per_second'] / torch_tps:.2f}")
    print(f"  same tokens: {vk['ids'] == ref}")


if __name__ == "__main__":
    main()
