#!/usr/bin/env python3
"""Batched greedy decoding of a random Marian of Transformer-base's shape (d_model 512, 6+6
layers, 8 heads, FFN 2048, vocabulary 32,000), in vkformer and in CTranslate2 on the same
CPU, in one run, rounds alternating, medians.

    python3 tools/bench_ctranslate2.py --vkformer build/vkformer [--dir /tmp/marian_base]
        [--rounds 3] [--batches 1,16] [--tokens 32]

Needs, in a virtual environment outside the repository (never the README's commands):
transformers, sentencepiece and ctranslate2 from PyPI (ctranslate2 4.4 reads the
transformers 4.36 that tools/hf_references uses). The model is made once with
transformers (random weights, seed 0; the tiny Marian reference's tokenizer files with
its vocabulary grown to 32,000 entries) and converted with ct2-transformers-converter.

Each source is 24 random token ids; each output exactly --tokens tokens (vkformer:
stop_at_eos off by --max-new-tokens with the JSON's decode figures; CTranslate2:
min_decoding_length = max_decoding_length). vkformer reports decode tokens/s itself;
CTranslate2's decode tokens/s is batch * (tokens - 1) / (t(tokens) - t(1 token)), which
takes its encoder and first step out. CTranslate2 runs on 2 threads (intra_threads=2), as
many as this machine has.
"""
import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import time
from statistics import median


def make_model(out):
    import torch
    from transformers import MarianConfig, MarianMTModel
    src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "hf", "marian")
    cfg = json.load(open(os.path.join(src, "config.json")))
    V = 32000
    cfg.update(d_model=512, encoder_layers=6, decoder_layers=6, encoder_attention_heads=8, decoder_attention_heads=8,
               encoder_ffn_dim=2048, decoder_ffn_dim=2048, vocab_size=V, decoder_vocab_size=V,
               max_position_embeddings=512, pad_token_id=V - 1, decoder_start_token_id=V - 1, num_hidden_layers=6)
    torch.manual_seed(0)
    model = MarianMTModel(MarianConfig(**{k: v for k, v in cfg.items()
                                          if k not in ("architectures", "transformers_version")})).eval()
    model.save_pretrained(out, safe_serialization=True)
    gen = json.load(open(os.path.join(src, "generation_config.json")))
    gen.update(bad_words_ids=[[V - 1]], decoder_start_token_id=V - 1, pad_token_id=V - 1, num_beams=1, max_length=64)
    json.dump(gen, open(os.path.join(out, "generation_config.json"), "w"), indent=2)
    for f in ("source.spm", "target.spm", "special_tokens_map.json", "tokenizer_config.json"):
        shutil.copy(os.path.join(src, f), out)
    inv = {i: t for t, i in json.load(open(os.path.join(src, "vocab.json"))).items()}
    grown = {(inv[i] if i < len(inv) - 1 else inv[max(inv)] if i == V - 1 else f"\u2581tok{i}"): i for i in range(V)}
    json.dump(grown, open(os.path.join(out, "vocab.json"), "w"), ensure_ascii=False)
    subprocess.run(["ct2-transformers-converter", "--model", out, "--output_dir", out + "_ct2", "--force"], check=True,
                   stdout=subprocess.DEVNULL)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--vkformer", default="build/vkformer")
    ap.add_argument("--dir", default="/tmp/vkf_marian_base")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--batches", default="1,16")
    ap.add_argument("--tokens", type=int, default=32)
    args = ap.parse_args()
    import ctranslate2
    if not os.path.exists(os.path.join(args.dir + "_ct2", "model.bin")):
        make_model(args.dir)
    random.seed(5)
    batches = [int(b) for b in args.batches.split(",")]
    srcs = [[random.randrange(3, 31000) for _ in range(24)] for _ in range(max(batches))]
    vocab = json.load(open(os.path.join(args.dir + "_ct2", "shared_vocabulary.json")))
    ct2 = {t: ctranslate2.Translator(args.dir + "_ct2", device="cpu", compute_type=t, intra_threads=2, inter_threads=1)
           for t in ("float32", "int8")}

    def ct2_run(t, batch, n):
        toks = [[vocab[i] for i in s] + ["</s>"] for s in srcs[:batch]]
        t0 = time.perf_counter()
        ct2[t].translate_batch(toks, beam_size=1, max_decoding_length=n, min_decoding_length=n, max_batch_size=batch)
        return time.perf_counter() - t0

    def vk_run(weights, batch):
        cmd = [args.vkformer, "generate", "--model", args.dir, "--src-ids",
               ";".join(",".join(map(str, s)) for s in srcs[:batch]), "--max-new-tokens", str(args.tokens), "--json",
               "--warmup", "--precision", "fp32"] + (["--weights", weights] if weights != "fp32" else [])
        d = json.loads(subprocess.check_output(cmd, stderr=subprocess.DEVNULL).decode().strip().splitlines()[-1])
        return d["decode_tokens_per_second"]

    configs = [(f"vkformer {w}", b, (lambda w=w, b=b: vk_run(w, b))) for w in ("fp32", "q8_0") for b in batches]
    configs += [(f"CTranslate2 {t}", b, (lambda t=t, b=b: b * (args.tokens - 1) / (ct2_run(t, b, args.tokens) -
                                                                                   ct2_run(t, b, 1))))
                for t in ("float32", "int8") for b in batches]
    for t in ct2:
        ct2_run(t, max(batches), 4)  # warm-up
    got = {}
    for r in range(args.rounds):
        for name, b, f in (configs if r % 2 == 0 else configs[::-1]):
            got.setdefault((name, b), []).append(f())
    print(f"random Marian, Transformer-base shape, greedy, {args.tokens} tokens from 24, decode tokens/s, "
          f"median of {args.rounds} alternating rounds")
    med = {k: median(v) for k, v in got.items()}
    for (name, b), v in med.items():
        print(f"  {name:22s} batch {b:3d}: {v:8.1f}   rounds " + " ".join(f"{x:.1f}" for x in got[(name, b)]))
    for b in batches:
        print(f"  batch {b}: vkformer fp32 / CTranslate2 float32 {med[('vkformer fp32', b)] / med[('CTranslate2 float32', b)]:.2f}, "
              f"vkformer q8_0 / CTranslate2 int8 {med[('vkformer q8_0', b)] / med[('CTranslate2 int8', b)]:.2f}")
    if 1 in batches:
        for b in batches[1:]:
            print(f"  vkformer fp32 batch {b} / batch 1: {med[('vkformer fp32', b)] / med[('vkformer fp32', 1)]:.2f}")


if __name__ == "__main__":
    sys.exit(main())
