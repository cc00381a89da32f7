#!/usr/bin/python3
"""GPT-2 decoding speed, vkformer beside a PyTorch GPT-2 with a KV cache, in one run.

    /usr/bin/python3 tools/bench_gpt2.py --model DIR [--vkformer build/vkformer] [--tokens 128]
        [--precision fp16] [--prompt-ids 5,17,9]

The PyTorch baseline is GPT-2's forward pass written out here (GPT2LMHeadModel's
computation: learned positions, pre-norm blocks, gelu_new, ln_f, the tied output
projection) over the checkpoint's own tensors, decoding greedily at batch 1 as a fast
PyTorch program would: each step feeds only the newest token, with every layer's keys and
values cached, and the output projection applied to the last position only. It runs in
fp32 (torch's CPU matmuls) at every thread count; the fastest is the baseline. Before
timing, it must reproduce transformers' greedy tokens in tests/hf/gpt2/references.json
(made by tools/hf_references/make_gpt2_references.py) token for token, and vkformer's
tokens on the benchmarked model.

Needs only Debian's torch and numpy: the safetensors files are read by tools/export.py's reader.
"""
import argparse
import json
import math
import os
import subprocess
import sys
import time

import numpy as np
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))
from export import read_safetensors  # noqa: E402


def load(directory):
    """The checkpoint's tensors (one file or shards), names without the transformer. prefix."""
    index = os.path.join(directory, "model.safetensors.index.json")
    files = sorted(set(json.load(open(index))["weight_map"].values())) if os.path.exists(index) else ["model.safetensors"]
    tensors = {}
    for f in files:
        tensors.update({k: torch.from_numpy(v.astype(np.float32)) for k, v in read_safetensors(os.path.join(directory, f)).items()})
    return {k[len("transformer."):] if k.startswith("transformer.") else k: v for k, v in tensors.items()}


class Gpt2:
    """GPT2LMHeadModel's computation with a KV cache, in fp32."""

    def __init__(self, directory):
        self.config = json.load(open(os.path.join(directory, "config.json")))
        self.w = load(directory)
        self.heads = self.config["n_head"]
        self.layers = self.config["n_layer"]
        self.eps = self.config.get("layer_norm_epsilon", 1e-5)
        self.head = self.w.get("lm_head.weight", self.w["wte.weight"])

    def norm(self, x, p):
        return torch.nn.functional.layer_norm(x, x.shape[-1:], self.w[p + ".weight"], self.w[p + ".bias"], self.eps)

    def step(self, ids, cache):
        """ids: [n] new tokens after the cached ones; returns the last position's logits."""
        w, n = self.w, ids.shape[0]
        t0 = cache[0][0].shape[0] if cache else 0
        x = w["wte.weight"][ids] + w["wpe.weight"][t0:t0 + n]
        d = x.shape[-1] // self.heads
        for i in range(self.layers):
            p = f"h.{i}"
            q, k, v = (self.norm(x, p + ".ln_1") @ w[p + ".attn.c_attn.weight"] + w[p + ".attn.c_attn.bias"]).split(x.shape[-1], -1)
            if len(cache) <= i:
                cache.append((k, v))
            else:
                cache[i] = (torch.cat([cache[i][0], k]), torch.cat([cache[i][1], v]))
            k, v = cache[i]
            qh, kh, vh = (t.view(t.shape[0], self.heads, d).transpose(0, 1) for t in (q, k, v))
            s = qh @ kh.transpose(-1, -2) / math.sqrt(d)
            if n > 1:  # causal within the new tokens
                mask = torch.ones(n, kh.shape[1], dtype=torch.bool).tril(kh.shape[1] - n)
                s = s.masked_fill(~mask, float("-inf"))
            a = (torch.softmax(s, -1) @ vh).transpose(0, 1).reshape(n, -1)
            x = x + a @ w[p + ".attn.c_proj.weight"] + w[p + ".attn.c_proj.bias"]
            h = self.norm(x, p + ".ln_2") @ w[p + ".mlp.c_fc.weight"] + w[p + ".mlp.c_fc.bias"]
            h = torch.nn.functional.gelu(h, approximate="tanh")
            x = x + h @ w[p + ".mlp.c_proj.weight"] + w[p + ".mlp.c_proj.bias"]
        return self.norm(x[-1:], "ln_f") @ self.head.T

    def greedy(self, prompt, tokens):
        cache, out = [], []
        with torch.no_grad():
            logits = self.step(torch.tensor(prompt), cache)
            for _ in range(tokens):
                out.append(int(logits.argmax()))
                if len(out) == tokens:
                    break
                logits = self.step(torch.tensor(out[-1:]), cache)
        return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True, help="a GPT-2 directory (GPT-2 small's shape for the acceptance figure)")
    ap.add_argument("--vkformer", default=os.path.join(ROOT, "build", "vkformer"))
    ap.add_argument("--tokens", type=int, default=128)
    ap.add_argument("--precision", default="fp16")
    ap.add_argument("--prompt-ids", default="5,17,9")
    args = ap.parse_args()
    prompt = [int(x) for x in args.prompt_ids.split(",")]

    # 1. The baseline reproduces transformers' greedy tokens.
    refs = json.load(open(os.path.join(ROOT, "tests", "hf", "gpt2", "references.json")))
    for name in ("lm", "bf16", "eos"):
        ref_model = Gpt2(os.path.join(ROOT, "tests", "hf", "gpt2", name))
        for r in refs["models"][name]:
            got = ref_model.greedy(r["ids"], refs["new_tokens"])
            want = r["greedy"]
            eos = ref_model.config.get("eos_token_id")
            if eos in got:
                got = got[:got.index(eos) + 1]
            if got != want:
                sys.exit(f"the PyTorch baseline does not reproduce transformers' tokens on {name}: {got} != {want}")
    print("PyTorch baseline: transformers' greedy tokens reproduced on tests/hf/gpt2")

    # 2. vkformer on the model, then the baseline at every thread count.
    t = time.perf_counter()
    model = Gpt2(args.model)
    torch_load = time.perf_counter() - t
    out = subprocess.run([args.vkformer, "generate", "--model", args.model, "--ids", args.prompt_ids, "--max-new-tokens",
                          str(args.tokens), "--json", "--warmup", "--precision", args.precision],
                         capture_output=True, text=True, check=True)
    vk = json.loads(out.stdout)
    runs = {}
    for threads in range(1, (os.cpu_count() or 1) + 1):
        torch.set_num_threads(threads)
        model.greedy(prompt, 4)  # warm-up
        t0 = time.perf_counter()
        ids = model.greedy(prompt, args.tokens)
        runs[threads] = (ids, args.tokens / (time.perf_counter() - t0))
    best = max(runs, key=lambda k: runs[k][1])
    same = vk["ids"][0] == runs[best][0][:len(vk["ids"][0])]
    print(f"GPT-2 greedy decoding, batch 1, {args.tokens} tokens after a {len(prompt)}-token prompt ({args.model})")
    for threads, (_, tps) in runs.items():
        print(f"  PyTorch {torch.__version__} fp32, KV cache, {threads} thread(s): {tps:8.1f} tokens/s")
    print(f"  vkformer on {vk['device']} ({args.precision}): {vk['decode_tokens_per_second']:8.1f} tokens/s")
    print(f"  ratio vkformer / PyTorch ({best} threads): {vk['decode_tokens_per_second'] / runs[best][1]:.2f}")
    print(f"  vkformer gives PyTorch's tokens: {same}")
    print(f"  load: vkformer {vk['load_seconds']:.2f} s ({args.precision}), this script's reader {torch_load:.2f} s")
    if not same:
        sys.exit("vkformer's tokens differ from the baseline's")


if __name__ == "__main__":
    main()
