#!/usr/bin/python3
"""The decoder-only command-line contract on tests/hf/gpt2 (README: GPT-2):

  vkformer generate --model DIR --ids 5,17,9[;...] --max-new-tokens N --json
      JSON `ids`: one list per prompt of the new tokens only, transformers' greedy ones
  vkformer score --model DIR --ids 5,17,9 --logits-out L.npy
      every position's logits, float32 [n, V], within 1e-4 (fp32) / 1e-2 (fp16) relative

and the other family's options refused by name. Usage: gpt2_contract.py VKFORMER SOURCE_DIR WORK_DIR
"""
import json
import os
import subprocess
import sys

import numpy as np

vkformer, source, work = sys.argv[1:4]
gpt2 = os.path.join(source, "tests", "hf", "gpt2")
refs = json.load(open(os.path.join(gpt2, "references.json")))
n = refs["new_tokens"]


def run(*args, ok=True):
    out = subprocess.run([vkformer, *args], capture_output=True, text=True)
    assert (out.returncode == 0) == ok, (args, out.returncode, out.stderr)
    assert "validation" not in out.stderr.lower(), out.stderr
    return out


for name in ("lm", "base", "sharded", "bf16", "eos"):
    model = os.path.join(gpt2, name)
    prompts = [r["ids"] for r in refs["models"][name]]
    for precision in ("fp32", "fp16"):
        ids_arg = ";".join(",".join(map(str, p)) for p in prompts)
        got = json.loads(run("generate", "--model", model, "--ids", ids_arg, "--max-new-tokens", str(n), "--json",
                             "--precision", precision).stdout)
        assert len(got["ids"]) == len(prompts), got
        for r, ids in zip(refs["models"][name], got["ids"]):
            if precision == "fp32":
                assert ids == r["greedy"], (name, r["ids"], ids, r["greedy"])
            else:  # fp16 storage: the first token (the references' margins are ~1 against ~1e-2)
                assert ids[0] == r["greedy"][0], (name, precision, r["ids"], ids, r["greedy"])
        for r in refs["models"][name]:
            path = os.path.join(work, f"gpt2_{name}_{precision}.npy")
            run("score", "--model", model, "--ids", ",".join(map(str, r["ids"])), "--logits-out", path,
                "--precision", precision)
            got = np.load(path)
            want = np.array(r["logits"], dtype=np.float64).reshape(len(r["ids"]), -1)
            assert got.dtype == np.float32 and got.shape == want.shape, (got.dtype, got.shape, want.shape)
            err = np.linalg.norm(got - want) / np.linalg.norm(want)
            assert err < (1e-4 if precision == "fp32" else 1e-2), (name, precision, err)
    # The penalty against each prompt's reference, one prompt a run: in a left-padded batch
    # it counts the pad ids too, as transformers' generate() does (tests/model/
    # hf_generate_test.cpp checks that against transformers' batches).
    for r in refs["models"][name]:
        penalised = json.loads(run("generate", "--model", model, "--ids", ",".join(map(str, r["ids"])),
                                   "--max-new-tokens", str(n), "--json",
                                   "--repetition-penalty", str(refs["repetition_penalty"])).stdout)
        assert penalised["ids"] == [r["greedy_repetition_penalty"]], (name, r["ids"], penalised["ids"])
    print("ok", name)

# Text: the JSON's `text` is transformers' decoding of the greedy ids; --prompt streams
# the continuation of the prompt's tokens (the tokenizer's ids), the same text.
lm = os.path.join(gpt2, "lm")
prompts = [r["ids"] for r in refs["models"]["lm"]]
got = json.loads(run("generate", "--model", lm, "--ids", ";".join(",".join(map(str, p)) for p in prompts),
                     "--max-new-tokens", str(n), "--json").stdout)
assert got["text"] == refs["tokenizer"]["greedy_text"], (got["text"], refs["tokenizer"]["greedy_text"])
sentence, sentence_ids = refs["tokenizer"]["sentences"][0], refs["tokenizer"]["ids"][0]
by_ids = json.loads(run("generate", "--model", lm, "--ids", ",".join(map(str, sentence_ids)), "--max-new-tokens", "8",
                        "--json").stdout)
streamed = run("generate", "--model", lm, "--prompt", sentence, "--max-new-tokens", "8")
assert streamed.stdout == by_ids["text"][0] + "\n", (streamed.stdout, by_ids["text"][0])
assert "tokens/s" in streamed.stderr, streamed.stderr
# Several EOS ids and a stop string end an output where they appear (the token kept).
greedy = refs["models"]["lm"][0]["greedy"]
got = json.loads(run("generate", "--model", lm, "--ids", ",".join(map(str, prompts[0])), "--max-new-tokens", str(n),
                     "--eos-ids", str(greedy[3]), "--json").stdout)
assert got["ids"][0] == greedy[:greedy.index(greedy[3]) + 1] and got["finished"] == [True], got
full_text = refs["tokenizer"]["greedy_text"][0]
stop = full_text.strip()[:3]
got = json.loads(run("generate", "--model", lm, "--ids", ",".join(map(str, prompts[0])), "--max-new-tokens", str(n),
                     "--stop", stop, "--json").stdout)
assert stop in got["text"][0] and got["finished"] == [True] and len(got["ids"][0]) < n, (stop, got)
print("ok: text")

# bench model on a decoder-only model: prompt processing and greedy decoding.
report = os.path.join(work, "gpt2_bench.json")
run("bench", "model", "--model", lm, "--quick", "--json-out", report)
model_run = json.load(open(report))["runs"][0]["model"]
assert [p["tokens"] for p in model_run["prompt"]] == [16, 32] and model_run["greedy"][0]["tokens"] == 8, model_run
print("ok: bench model")

# Each family's input options, refused for the other by name.
err = run("generate", "--model", lm, "--src-ids", "1,2", ok=False).stderr
assert "--src-ids is for encoder-decoder models" in err and "--ids" in err, err
err = run("score", "--model", lm, "--src-ids", "1", "--tgt-ids", "1", "--logits-out", os.path.join(work, "x.npy"),
          ok=False).stderr
assert "is for encoder-decoder models" in err, err
err = run("generate", "--model", lm, "--ids", ",".join(["1"] * 65), ok=False).stderr
assert "(n_positions)" in err, err
seq2seq = os.path.join(source, "tests", "hf", "bart")
err = run("generate", "--model", seq2seq, "--ids", "1,2", ok=False).stderr
assert "--ids is for decoder-only models" in err and "--src-ids" in err, err
err = run("generate", "--model", seq2seq, "--prompt", "text", ok=False).stderr
assert "use `vkformer translate`" in err, err
print("ok: options")
