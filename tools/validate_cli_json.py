#!/usr/bin/python3
"""Runs every vkformer command that prints results with --json and validates what it
prints against its schema in docs/cli.schema.json (bench has docs/bench.schema.json and
its own test). Usage: validate_cli_json.py VKFORMER SOURCE_DIR SEQ2SEQ_MODEL_DIR WORK_DIR"""
import json
import os
import subprocess
import sys

import jsonschema


def main():
    vkformer, source, seq2seq, work = sys.argv[1:5]
    with open(os.path.join(source, "docs", "cli.schema.json")) as f:
        schema = json.load(f)
    forecaster = os.path.join(source, "samples", "forecast")
    logits = os.path.join(work, "cli_json_logits.npy")
    commands = {
        "info": ["info", "--json"],
        "selftest": ["selftest", "--json"],
        "generate": ["generate", "--model", seq2seq, "--src-ids", "3,4,5;4,5", "--max-new-tokens", "4", "--json"],
        "score": ["score", "--model", seq2seq, "--src-ids", "3,4,5", "--tgt-ids", "1,2,3", "--logits-out", logits, "--json"],
        "translate": ["translate", "--model", os.path.join(source, "samples", "dates"), "--json", "3/3/98", "", "May 5 2020"],
        "forecast": ["forecast", "--model", forecaster, "--json"],
        # a tuning file in a cache directory of the test's own, so no other run reads it
        "tune": ["tune", "--budget-s", "3", "--json"],
    }
    os.environ["VKF_CACHE_DIR"] = os.path.join(work, "cli_json_cache")
    for name, args in commands.items():
        run = subprocess.run([vkformer] + args, capture_output=True, text=True, timeout=120)
        assert run.returncode == 0, f"{name}: exit {run.returncode}: {run.stderr}"
        lines = [line for line in run.stdout.splitlines() if line.strip()]
        docs = [json.loads(line) for line in lines] if name == "translate" else [json.loads(run.stdout)]
        for doc in docs:
            jsonschema.validate(doc, {**schema["$defs"][name], "$defs": schema["$defs"]})
        if name == "generate":
            assert len(docs[0]["ids"]) == 2 and len(docs[0]["finished"]) == 2, "generate: one list per source"
        if name == "translate":
            assert [d["input"] for d in docs] == ["3/3/98", "", "May 5 2020"], "translate: one object per input, in order"
            assert docs[1]["output"] == "" and docs[1]["ids"] == [], "translate: an empty input gives an empty output"
        if name == "score":
            assert os.path.getsize(logits) == 128 + 4 * docs[0]["shape"][0] * docs[0]["shape"][1], "score: .npy size"
        print(f"{name}: {len(docs)} document(s) valid")


if __name__ == "__main__":
    main()
