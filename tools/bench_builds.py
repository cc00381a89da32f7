#!/usr/bin/python3
"""Decoding speed of two vkformer builds on the same model, alternating in one run: a
refactor's "no speed lost" check (docs/performance.md).

    /usr/bin/python3 tools/bench_builds.py OLD/vkformer NEW/vkformer --model DIR [--rounds 5]
        [--tokens 32] [--ids 1,2,3] [--src-ids 5,6,7] [--precision fp32] [--device NAME]

Each round runs `generate --json` once with each build (which goes first alternates), and
the script prints each build's per-round decode tokens/s, their medians, the ratio
new/old of the medians with the range of the per-round ratios (and the same for an
encoder-decoder's encode time, `encode_ms`), and both builds' dispatch counts per layer,
which must be identical (exit status 1 otherwise). The generated ids must be identical too.
"""
import argparse
import json
from statistics import median
import subprocess
import sys


def run(binary, args):
    cmd = [binary, "generate", "--model", args.model, "--max-new-tokens", str(args.tokens), "--json",
           "--precision", args.precision]
    cmd += ["--ids", args.prompt_ids] if args.prompt_ids else ["--src-ids", args.src_ids]
    if args.device:
        cmd += ["--device", args.device]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("--model", required=True)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--tokens", type=int, default=32)
    ap.add_argument("--ids", dest="prompt_ids", default="")
    ap.add_argument("--src-ids", default="5,6,7,8,9,10,11,12")
    ap.add_argument("--precision", default="fp32")
    ap.add_argument("--device", default="")
    args = ap.parse_args()
    builds = {"old": args.old, "new": args.new}
    speed = {"old": [], "new": []}
    encode = {"old": [], "new": []}
    seen = {}
    for r in range(args.rounds):
        for name in (["old", "new"] if r % 2 == 0 else ["new", "old"]):
            report = run(builds[name], args)
            speed[name].append(report["decode_tokens_per_second"])
            if report.get("encode_ms"):
                encode[name].append(report["encode_ms"])
            seen.setdefault(name, (report["counters"], report["ids"]))
    ratios = [n / o for n, o in zip(speed["new"], speed["old"])]
    m_old, m_new = median(speed["old"]), median(speed["new"])
    print(f"model {args.model}, {args.precision}, {args.tokens} tokens, {args.rounds} rounds alternating")
    for name in ("old", "new"):
        print(f"  {name}: " + " ".join(f"{s:.2f}" for s in speed[name]) + f" tokens/s, median {median(speed[name]):.2f}")
    print(f"  new/old: {m_new / m_old:.3f} (per round {min(ratios):.3f}-{max(ratios):.3f})")
    if encode["old"] and encode["new"]:
        for name in ("old", "new"):
            print(f"  {name} encode: " + " ".join(f"{e:.2f}" for e in encode[name]) + f" ms, median {median(encode[name]):.2f}")
        e_ratios = [o / n for n, o in zip(encode["new"], encode["old"])]
        print(f"  encode speed new/old: {median(encode['old']) / median(encode['new']):.3f} "
              f"(per round {min(e_ratios):.3f}-{max(e_ratios):.3f})")
    counters_old, ids_old = seen["old"]
    counters_new, ids_new = seen["new"]
    keys = ("dispatches_per_decoder_layer", "dispatches_per_encoder_layer", "submits_per_token")
    print("  dispatches per decoder layer, per encoder layer, submits per token: old " +
          ", ".join(str(counters_old.get(k)) for k in keys) + "; new " + ", ".join(str(counters_new.get(k)) for k in keys))
    same = all(counters_old.get(k) == counters_new.get(k) for k in keys) and ids_old == ids_new
    if not same:
        print("  DIFFERENT counts or ids", file=sys.stderr)
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
