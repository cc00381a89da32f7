#!/usr/bin/python3
"""Batch-1 greedy decoding speed of a Llama-family directory (save_pretrained) in vkformer
and in PyTorch (transformers' LlamaForCausalLM, fp32, its KV cache), measured in one run
on this machine, after checking that both produce the same tokens.

    PYTHONPATH=/path/to/transformers /usr/bin/python3 tools/bench_llama.py --model DIR
        [--vkformer build/vkformer] [--tokens 64] [--precision fp16]

PyTorch runs at every thread count (the fastest is the baseline); its decode time is
generate(tokens) less generate(1) (the prompt's pass and the first token), as vkformer's
decode_tokens_per_second leaves out the prompt. vkformer's tokens are checked in fp32
against transformers' (fp16 storage may part from them after a few tokens on random
weights); its speed is measured at --precision. Needs transformers (not a README command).
"""
import argparse
import json
import os
import subprocess
import time

import torch
from transformers import AutoModelForCausalLM


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--vkformer", default="build/vkformer")
    ap.add_argument("--tokens", type=int, default=64)
    ap.add_argument("--precision", default="fp16")
    args = ap.parse_args()
    model = AutoModelForCausalLM.from_pretrained(args.model, torch_dtype=torch.float32).eval()
    vocab = model.config.vocab_size
    prompt = [(4 + 7 * i) % vocab for i in range(8)]
    x = torch.tensor([prompt])

    def generate(n):
        with torch.no_grad():
            return model.generate(x, max_new_tokens=n, min_new_tokens=n, do_sample=False, use_cache=True,
                                  pad_token_id=0)[0, len(prompt):].tolist()

    runs = {}
    for threads in range(1, (os.cpu_count() or 1) + 1):
        torch.set_num_threads(threads)
        generate(2)  # warm-up
        t0 = time.perf_counter()
        generate(1)
        t1 = time.perf_counter()
        ids = generate(args.tokens)
        t2 = time.perf_counter()
        runs[threads] = ((args.tokens - 1) / ((t2 - t1) - (t1 - t0)), ids)
    best = max(runs, key=lambda k: runs[k][0])
    ref = runs[best][1]

    def vkformer(precision):
        out = subprocess.check_output([args.vkformer, "generate", "--model", args.model, "--ids", ",".join(map(str, prompt)),
                                       "--max-new-tokens", str(args.tokens), "--json", "--warmup", "--precision",
                                       precision], stderr=subprocess.DEVNULL)
        return json.loads(out)

    vk32 = vkformer("fp32")
    vk = vkformer(args.precision) if args.precision != "fp32" else vk32
    print(f"{args.model}: greedy decoding, batch 1, {args.tokens} tokens after an 8-token prompt")
    for threads, (tps, _) in runs.items():
        print(f"  PyTorch {torch.__version__} + transformers, fp32, {threads} thread(s): {tps:8.1f} tokens/s")
    print(f"  vkformer on {vk['device']} ({args.precision}): {vk['decode_tokens_per_second']:8.1f} tokens/s, "
          f"model loaded in {vk['load_seconds']:.2f} s")
    print(f"  ratio vkformer / PyTorch ({best} threads): {vk['decode_tokens_per_second'] / runs[best][0]:.2f}")
    same = vk32["ids"][0] == ref
    print(f"  vkformer fp32 gives transformers' tokens: {same}")
    if not same:
        raise SystemExit("vkformer's fp32 tokens differ from transformers'")


if __name__ == "__main__":
    main()
