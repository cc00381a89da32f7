#!/usr/bin/python3
"""GEMM side by side: the sizes of a `vkformer bench ops` report, timed again with
torch.matmul on the same machine, and the ratio vkformer / torch printed per size.

    build/vkformer bench ops --precision fp16 --json-out ops.json
    /usr/bin/python3 tools/bench_gemm_torch.py ops.json [--device cuda|cpu] [--json-out FILE]

C = A B^T, A [M, K], B [N, K] (the Linear-layer layout vkformer benchmarks). On CUDA the
baseline is cuBLAS in the report's precision: fp32 with TF32 off
(torch.backends.cuda.matmul.allow_tf32 = False), or fp16 with fp32 accumulation; each
size is the median of repeated runs between CUDA events. On CPU it is fp32 at every
thread count, the fastest counted. Run it in the same command as the report so both are
measured on the same machine, and give the card and driver beside the numbers (the
report names the device; `nvidia-smi` the driver).
"""
import argparse
import json
import statistics
import sys
import time

import torch


def time_cuda(fn, min_seconds=0.2):
    fn()
    torch.cuda.synchronize()
    times = []
    start = time.perf_counter()
    while len(times) < 5 or (time.perf_counter() - start < min_seconds and len(times) < 200):
        begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        begin.record()
        fn()
        end.record()
        end.synchronize()
        times.append(begin.elapsed_time(end) / 1e3)
    return statistics.median(times)


def time_cpu(fn, min_seconds=0.2):
    fn()
    times = []
    start = time.perf_counter()
    while len(times) < 3 or (time.perf_counter() - start < min_seconds and len(times) < 50):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def torch_seconds(m, n, k, device, dtype):
    a = torch.rand(m, k, device=device, dtype=dtype) - 0.5
    b = torch.rand(n, k, device=device, dtype=dtype) - 0.5
    bt = b.t()
    if device == "cuda":
        return time_cuda(lambda: torch.matmul(a, bt))
    best = None
    for threads in sorted({1, torch.get_num_threads()}):
        torch.set_num_threads(threads)
        s = time_cpu(lambda: torch.matmul(a, bt))
        best = s if best is None else min(best, s)
    return best


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("report", help="a `vkformer bench ops --json-out` report")
    p.add_argument("--device", choices=["cuda", "cpu"], default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--json-out", help="also write the rows as JSON here")
    args = p.parse_args()
    try:
        with open(args.report) as f:
            report = json.load(f)
        runs = [r for r in report["runs"] if "ops" in r]
    except (OSError, ValueError, KeyError, TypeError) as e:
        sys.exit(f"bench_gemm_torch: {args.report} is not a vkformer bench report with ops: {e}")
    if not runs:
        sys.exit(f"bench_gemm_torch: {args.report} has no `bench ops` run")
    if args.device == "cuda" and not torch.cuda.is_available():
        sys.exit("bench_gemm_torch: --device cuda, but this PyTorch sees no CUDA device")
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    rows = []
    for run in runs:
        precision = run.get("settings", {}).get("precision", "fp32")
        dtype = torch.float16 if precision == "fp16" and args.device == "cuda" else torch.float32
        baseline = ("cuBLAS " + ("fp16" if dtype == torch.float16 else "fp32, TF32 off")) if args.device == "cuda" \
            else "torch CPU fp32"
        where = torch.cuda.get_device_name() if args.device == "cuda" else "CPU"
        print(f"vkformer on {run['device']['name']} ({run['device'].get('driver_info', '')}), {precision} storage; "
              f"baseline: torch {torch.__version__} matmul on {where}, {baseline}")
        print(f"{'M x N x K':>22} {'vkformer GFLOP/s':>17} {'us':>10} {'torch GFLOP/s':>14} {'us':>10} {'ratio':>7}")
        for g in run["ops"]["gemm"] + run["ops"].get("gemm_shapes", []):
            m, n, k = g.get("m", g.get("n")), g["n"], g.get("k", g.get("n"))
            s = torch_seconds(m, n, k, args.device, dtype)
            flops = 2.0 * m * n * k
            torch_gf = flops / s / 1e9
            ratio = g["gflops"] / torch_gf
            vk_us = g.get("us", flops / (g["gflops"] * 1e9) * 1e6)
            print(f"{f'{m}x{n}x{k}':>22} {g['gflops']:17.1f} {vk_us:10.1f} {torch_gf:14.1f} {s * 1e6:10.1f} {ratio:7.3f}")
            rows.append({"device": run["device"]["name"], "precision": precision, "m": m, "n": n, "k": k,
                         "vkformer_gflops": g["gflops"], "vkformer_us": vk_us, "torch_gflops": torch_gf,
                         "torch_us": s * 1e6, "ratio": ratio, "baseline": baseline})
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump({"rows": rows, "torch": torch.__version__}, f, indent=1)


if __name__ == "__main__":
    main()
