#!/usr/bin/python3
"""vkformer's generate beside transformers' generate() on the same decoder-only model and
prompt, same machine, same run: alternating rounds, medians, the ratio printed.

Each round times, one after the other:
  vkformer  `vkformer generate --model DIR --ids IDS --max-new-tokens N [--beam K]
            [--precision P] --json` ("seconds": the generation, the model loaded before it)
  torch     model.generate(ids, max_new_tokens=N, min_new_tokens=N, num_beams=K,
            do_sample=False), torch.set_num_threads(THREADS)
min_new_tokens keeps both at N new tokens (an EOS would end one early); vkformer's run
gets the same by --min-new-tokens N.

Needs transformers (a venv with --system-site-packages on Debian's torch):

  /path/to/venv/bin/python tools/bench_generate_transformers.py build/vkformer MODEL_DIR \
      [--beam 4] [--new-tokens 32] [--prompt-tokens 16] [--rounds 3] [--threads 2]
"""
import argparse
import json
import statistics
import subprocess
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("vkformer")
    ap.add_argument("model")
    ap.add_argument("--beam", type=int, default=4)
    ap.add_argument("--new-tokens", type=int, default=32)
    ap.add_argument("--prompt-tokens", type=int, default=16)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--precision", default="fp32")
    a = ap.parse_args()

    import torch
    from transformers import AutoModelForCausalLM
    torch.set_num_threads(a.threads)
    model = AutoModelForCausalLM.from_pretrained(a.model).eval()
    ids = [(7 + 31 * i) % model.config.vocab_size for i in range(a.prompt_tokens)]
    kw = dict(max_new_tokens=a.new_tokens, min_new_tokens=a.new_tokens, num_beams=a.beam, do_sample=False,
              pad_token_id=model.config.eos_token_id)
    with torch.no_grad():
        model.generate(torch.tensor([ids]), **kw)  # warm-up

    cmd = [a.vkformer, "generate", "--model", a.model, "--ids", ",".join(map(str, ids)), "--max-new-tokens",
           str(a.new_tokens), "--min-new-tokens", str(a.new_tokens), "--precision", a.precision, "--json"]
    if a.beam > 1:
        cmd += ["--beam", str(a.beam)]
    subprocess.run(cmd, capture_output=True, check=True)  # warm-up: pipeline caches
    ours, theirs, device = [], [], ""
    for r in range(a.rounds):
        out = json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout)
        ours.append(a.new_tokens / out["seconds"])
        device = out["device"]
        t = time.perf_counter()
        with torch.no_grad():
            model.generate(torch.tensor([ids]), **kw)
        theirs.append(a.new_tokens / (time.perf_counter() - t))
        print(f"round {r + 1}: vkformer {ours[-1]:.2f} tokens/s, transformers {theirs[-1]:.2f}", flush=True)
    mo, mt = statistics.median(ours), statistics.median(theirs)
    print(f"beam {a.beam}, prompt {a.prompt_tokens}, {a.new_tokens} new tokens: vkformer ({a.precision}, {device}) "
          f"{mo:.2f} tokens/s; transformers on torch {torch.__version__}, {a.threads} threads: {mt:.2f}; ratio "
          f"{mo / mt:.2f}x (medians of {a.rounds} alternating rounds)")


if __name__ == "__main__":
    main()
