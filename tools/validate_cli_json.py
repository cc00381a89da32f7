#!/usr/bin/python3
"""Runs every vkformer command that prints results with --json and validates what it
prints against its schema in docs/cli.schema.json (bench has docs/bench.schema.json and
its own test). Usage: validate_cli_json.py VKFORMER SOURCE_DIR SEQ2SEQ_MODEL_DIR WORK_DIR"""
import json
import os
import subprocess
import sys

import jsonschema


def validate(doc, schema, name):
    jsonschema.validate(doc, {**schema["$defs"][name], "$defs": schema["$defs"]})


def run(vkformer, args):
    out = subprocess.run([vkformer] + args, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, f"{args}: exit {out.returncode}: {out.stderr}"
    assert "validation" not in out.stderr.lower(), out.stderr
    return out


def check_decoder_only(vkformer, source, schema):
    """A decoder-only model's generate --json: prompt figures beside the decode's."""
    llama = os.path.join(source, "tests", "hf", "llama", "with_tokenizer")
    doc = json.loads(run(vkformer, ["generate", "--model", llama, "--prompt", "The date is", "--json"]).stdout)
    validate(doc, schema, "generate")
    prompt = json.loads(run(vkformer, ["tokenize", "--model", llama, "--json", "The date is"]).stdout)
    assert doc["prompt_tokens"] == len(prompt["texts"][0]["ids"]), (doc["prompt_tokens"], prompt)
    assert doc["prompt_ms"] > 0 and doc["prompt_tokens_per_second"] > 0, doc
    assert doc["decode_tokens"] == len(doc["ids"][0]) - 1, doc
    assert doc["encode_ms"] == 0, doc
    err = run(vkformer, ["generate", "--model", llama, "--ids", "5,17,9", "--max-new-tokens", "4"]).stderr
    assert "prompt 3 tokens in" in err, err
    gpt2 = os.path.join(source, "tests", "hf", "gpt2", "lm")
    doc = json.loads(run(vkformer, ["score", "--model", gpt2, "--ids", "5,17,9,4", "--json"]).stdout)  # no file
    validate(doc, schema, "score")
    assert doc["scored_tokens"] == 3 and "logits_file" not in doc, doc
    print("generate (decoder-only): prompt figures present and consistent")


def check_info_on_every_model(vkformer, source, seq2seq, schema):
    """info --model, text and --json, on every reference model of every family."""
    dirs = [seq2seq, os.path.join(source, "samples", "dates")]
    for root, _, files in sorted(os.walk(os.path.join(source, "tests", "hf"))):
        if "config.json" in files and any(f.startswith("model") and f.endswith((".safetensors", ".index.json")) for f in files):
            dirs.append(root)
    families = set()
    for d in dirs:
        doc = json.loads(run(vkformer, ["info", "--model", d, "--json"]).stdout)
        validate(doc, schema, "info_model")
        families.add(doc["architecture"])
        text = run(vkformer, ["info", "--model", d]).stdout
        for key in ("kv_heads", "head_dim", "positions", "parameters", "checkpoint"):
            assert f"  {key} " in text, f"info --model {d}: no {key} in\n{text}"
    want = {"torch-seq2seq", "marian", "bart", "gpt2", "llama", "mistral", "qwen2", "bert", "roberta", "distilbert"}
    assert families >= want, f"info --model ran on {sorted(families)}, not every family {sorted(want)}"
    print(f"info --model: {len(dirs)} models of {len(families)} families valid")


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
    gpt2 = os.path.join(source, "tests", "hf", "gpt2", "lm")
    commands["version"] = ["version", "--json"]
    commands["tokenize"] = ["tokenize", "--model", gpt2, "--json", "The date is", "日本"]
    hidden = os.path.join(work, "cli_json_hidden.npy")
    commands["encode"] = ["encode", "--model", os.path.join(source, "tests", "hf", "bert", "base"), "--ids", "101,7,102",
                          "--token-types", "0,0,1", "--hidden-out", hidden, "--json"]
    sentence = os.path.join(source, "tests", "hf", "bert", "sentence")
    commands["embed"] = ["embed", "--model", sentence, "--json", "A man is eating food.", "Café 😀"]
    corpus = os.path.join(work, "cli_json_corpus.txt")
    with open(corpus, "w", encoding="utf-8") as f:
        f.write("A man is eating food.\nThe girl is carrying a baby.\nA monkey is playing drums.\n")
    commands["search"] = ["search", "--model", sentence, "--corpus", corpus, "--query", "The girl is carrying a baby.",
                          "--top", "2", "--json"]
    os.environ["VKF_CACHE_DIR"] = os.path.join(work, "cli_json_cache")
    check_decoder_only(vkformer, source, schema)
    check_info_on_every_model(vkformer, source, seq2seq, schema)
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
        if name == "encode":
            assert os.path.getsize(hidden) == 128 + 4 * docs[0]["tokens"] * docs[0]["width"], "encode: .npy size"
            assert docs[0]["pooled"] and docs[0]["hidden_out"] == hidden and docs[0]["pooled_out"] is None, docs[0]
        if name == "embed":
            assert docs[0]["count"] == 2 and len(docs[0]["embeddings"]) == 2 and docs[0]["pooling"] == ["mean"], docs[0]
        if name == "search":
            assert [r["line"] for r in docs[0]["results"]][0] == 2 and docs[0]["cache"] == "none", docs[0]
            assert abs(docs[0]["results"][0]["score"] - 1) < 1e-5, docs[0]
        if name == "score":
            assert os.path.getsize(logits) == 128 + 4 * docs[0]["shape"][0] * docs[0]["shape"][1], "score: .npy size"
            assert docs[0]["scored_tokens"] == 2 and docs[0]["perplexity"] >= 1, docs[0]
        print(f"{name}: {len(docs)} document(s) valid")


if __name__ == "__main__":
    main()
