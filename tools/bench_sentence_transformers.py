#!/usr/bin/python3
"""vkformer's sentence embeddings beside sentence-transformers on PyTorch, same machine,
same run: batch 32 of 128 tokens through a sentence-transformers model directory
(all-MiniLM-L6-v2 in docs/performance.md), alternating rounds, medians.

Each round times, one after the other:
  vkformer  `vkformer bench model --model DIR [--precision P] --json`: the encoder over a
            batch of 32 sequences of 128 token ids (its own median of 3 passes), as the
            Embedder runs it (pooling on the host is not in it: microseconds)
  torch     SentenceTransformer(DIR).encode of 32 texts of 126 words (128 tokens with
            [CLS] and [SEP]), batch_size 32, torch.set_num_threads(THREADS) (median of 3)

Needs sentence-transformers (a venv with --system-site-packages on Debian's torch):

  /path/to/venv/bin/python tools/bench_sentence_transformers.py build/vkformer MODEL_DIR \
      [--rounds 5] [--threads 2] [--precision fp32]
"""
import argparse
import json
import statistics
import subprocess
import time


def vkformer_round(vkformer, model, precision):
    out = subprocess.run([vkformer, "bench", "model", "--model", model, "--precision", precision, "--json"],
                         capture_output=True, text=True, check=True)
    report = json.loads(out.stdout)
    rows = [r for r in report["runs"][0]["model"]["encode"] if r.get("batch") == 32]
    return rows[0]["sequences_per_second"], report["runs"][0]["device"]["name"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("vkformer")
    ap.add_argument("model")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--precision", default="fp32")
    a = ap.parse_args()

    import torch
    from sentence_transformers import SentenceTransformer
    torch.set_num_threads(a.threads)
    st = SentenceTransformer(a.model, device="cpu")
    texts = [" ".join(["word"] * 126)] * 32
    assert len(st.tokenize(texts[:1])["input_ids"][0]) == 128
    st.encode(texts, batch_size=32, convert_to_tensor=True)  # warm-up

    def torch_round():
        times = []
        for _ in range(3):
            t = time.perf_counter()
            st.encode(texts, batch_size=32, convert_to_tensor=True)
            times.append(time.perf_counter() - t)
        return 32 / statistics.median(times)

    ours, theirs, device = [], [], ""
    for r in range(a.rounds):
        v, device = vkformer_round(a.vkformer, a.model, a.precision)
        ours.append(v)
        theirs.append(torch_round())
        print(f"round {r + 1}: vkformer {v:.1f} sequences/s, sentence-transformers {theirs[-1]:.1f}", flush=True)
    mo, mt = statistics.median(ours), statistics.median(theirs)
    print(f"vkformer ({a.precision}, {device}): {mo:.1f} sequences/s; sentence-transformers "
          f"{st.__class__.__module__.split('.')[0]} on torch {torch.__version__}, {a.threads} threads: {mt:.1f}; "
          f"ratio {mo / mt:.2f}x (batch 32 x 128 tokens, medians of {a.rounds} alternating rounds)")


if __name__ == "__main__":
    main()
