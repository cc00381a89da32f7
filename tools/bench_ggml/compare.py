#!/usr/bin/python3
"""Medians of tools/bench_ggml/run.sh's rounds: per shape, ggml's and vkformer's GFLOP/s
and their ratio; per shape class (squares, M = 1, M = 24 and 32, M = 256) the median
ratio. Usage: compare.py OUT_DIR ROUNDS"""
import json
import statistics
import sys


def main():
    out, rounds = sys.argv[1], int(sys.argv[2])
    ggml, vk = {}, {}
    for i in range(1, rounds + 1):
        for line in open(f"{out}/ggml-{i}.txt"):
            m, n, k, gf = line.split()
            ggml.setdefault((int(m), int(n), int(k)), []).append(float(gf))
        report = json.load(open(f"{out}/vkformer-{i}.json"))
        ops = report["runs"][0]["ops"]
        for row in ops["gemm"]:
            n = row["n"]
            vk.setdefault((n, n, n), []).append(row["gflops"])
        for row in ops["gemm_shapes"]:
            vk.setdefault((row["m"], row["n"], row["k"]), []).append(row["gflops"])
    classes = {}
    print(f"{'M x N x K':22s} {'ggml GFLOP/s':>13s} {'vkformer':>10s} {'ratio':>7s}")
    for shape in sorted(ggml, key=lambda s: (s[0] != s[1] or s[1] != s[2], s)):
        if shape not in vk:
            continue
        g, v = statistics.median(ggml[shape]), statistics.median(vk[shape])
        m, n, k = shape
        cls = "squares" if m == n == k else "M = 1" if m == 1 else "M = 24, 32" if m in (24, 32) else f"M = {m}"
        classes.setdefault(cls, []).append(v / g)
        print(f"{m}x{n}x{k:<14} {g:13.2f} {v:10.2f} {v / g:7.2f}")
    print("\nmedian ratio vkformer / ggml per class:")
    for cls, r in classes.items():
        print(f"  {cls:12s} {statistics.median(r):5.2f} (range {min(r):.2f}-{max(r):.2f})")


if __name__ == "__main__":
    main()
