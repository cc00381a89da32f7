#!/usr/bin/python3
"""`vkformer bench model --weights`: the report valid against docs/bench.schema.json, each
storage's ratios those of its own rounds (the ratio of the medians, and the median of
each round's ratio to the first storage's in the same round), and the table printing
both. Medians as the bench takes them: the upper middle of an even count.
Usage: bench_weights_report.py VKFORMER SOURCE_DIR WORK_DIR"""
import json
import os
import statistics
import subprocess
import sys


def main():
    vkformer, source, work = sys.argv[1:4]
    report = os.path.join(work, "bench_weights.json")
    model = os.path.join(source, "tests", "hf", "llama", "with_tokenizer")
    run = subprocess.run([vkformer, "bench", "model", "--quick", "--model", model, "--precision", "fp16",
                          "--weights", "fp16,q8_0", "--rounds", "4", "--json-out", report],
                         capture_output=True, text=True, timeout=240)
    if run.returncode != 0 or "validation" in run.stderr:
        sys.exit(f"bench failed ({run.returncode}):\n{run.stdout}\n{run.stderr}")
    subprocess.run([sys.executable, os.path.join(source, "tools", "validate_bench.py"),
                    os.path.join(source, "docs", "bench.schema.json"), report], check=True)
    weights = json.load(open(report))["runs"][0]["model"]["weights"]
    assert [w["weights"] for w in weights] == ["fp16", "q8_0"], weights
    base = weights[0]
    for w in weights:
        assert len(w["rounds"]) == 4 and len(w["prompt_rounds"]) == 4, w
        for key, rounds, first in (("", "rounds", "decode_tokens_per_second"),
                                   ("prompt_", "prompt_rounds", "prompt_tokens_per_second")):
            per_round = statistics.median_high(a / b for a, b in zip(w[rounds], base[rounds]))
            of_medians = statistics.median_high(w[rounds]) / statistics.median_high(base[rounds])
            assert abs(w[key + "round_ratio"] - per_round) <= 1e-9 * per_round, (key, w, per_round)
            assert abs(w[key + "ratio"] - of_medians) <= 1e-9 * of_medians, (key, w, of_medians)
            assert abs(w[first] - statistics.median_high(w[rounds])) <= 1e-9 * w[first], (key, w)
    assert base["round_ratio"] == 1.0 and base["prompt_round_ratio"] == 1.0, base
    header = next(line for line in run.stdout.splitlines() if line.startswith("weights "))
    assert header.count("per round") == 2, header
    row = next(line for line in run.stdout.splitlines() if line.startswith("q8_0 "))
    assert f"{weights[1]['round_ratio']:.2f}x" in row and f"{weights[1]['prompt_round_ratio']:.2f}x" in row, row
    print("ok:", row)


if __name__ == "__main__":
    main()
