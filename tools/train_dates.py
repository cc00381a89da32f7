#!/usr/bin/python3
"""Trains the date translator shipped in samples/dates (a few minutes on 2 cores).

    /usr/bin/python3 tools/train_dates.py [--out samples/dates] [--steps 3000]

Writes config.json + model.safetensors (fp16 weights), vocab.json (the character
tokenizer), heldout.tsv (1,000 examples never trained on) and heldout_torch.txt (what
PyTorch's greedy decoding of the shipped weights answers on each), and prints the
exact-match accuracy.
"""
import argparse
import json
import os
import sys
import time
import warnings

import torch
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from date_data import dataset, vocabulary  # noqa: E402
from export import export  # noqa: E402
from seq2seq import Seq2Seq, greedy  # noqa: E402

PAD, BOS, EOS, UNK = 0, 1, 2, 3


def encode(text, index):
    return [index.get(ch, UNK) for ch in text]


def batch(examples, index):
    src = [encode(s, index) for s, _ in examples]
    tgt = [[BOS] + encode(t, index) + [EOS] for _, t in examples]
    ws, wt = max(map(len, src)), max(map(len, tgt))
    return (torch.tensor([s + [PAD] * (ws - len(s)) for s in src]),
            torch.tensor([t + [PAD] * (wt - len(t)) for t in tgt]))


def main():
    warnings.filterwarnings("ignore")
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="samples/dates")
    ap.add_argument("--steps", type=int, default=6000)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--lr", type=float, default=2e-3)
    args = ap.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(1)  # measured faster than 2 on 2 cores (less contention)
    vocab = vocabulary()
    index = {ch: i for i, ch in enumerate(vocab)}
    config = {"architecture": "torch-seq2seq", "d_model": 128, "nhead": 4, "num_encoder_layers": 2,
              "num_decoder_layers": 2, "dim_feedforward": 256, "activation": "relu", "norm_first": True,
              "layer_norm_eps": 1e-5, "src_vocab_size": len(vocab), "tgt_vocab_size": len(vocab),
              "max_position": 64, "scale_embedding": True, "pad_id": PAD, "bos_id": BOS, "eos_id": EOS}
    model = Seq2Seq(config)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=args.lr, total_steps=args.steps, pct_start=0.1)
    loss_fn = nn.CrossEntropyLoss(ignore_index=PAD)
    train = dataset(args.steps * args.batch, seed=1)
    t0 = time.time()
    model.train()
    for step in range(args.steps):
        src, tgt = batch(train[step * args.batch:(step + 1) * args.batch], index)
        logits = model(src, tgt[:, :-1])
        loss = loss_fn(logits.reshape(-1, logits.shape[-1]), tgt[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        if step % 250 == 0 or step == args.steps - 1:
            print(f"step {step:5d}  loss {loss.item():.4f}  {time.time() - t0:6.0f} s", flush=True)

    # Ship fp16 weights; measure with exactly those (rounded) weights.
    model.eval()
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(p.half().float())
    export(model, args.out, "F16")
    with open(os.path.join(args.out, "vocab.json"), "w") as f:
        json.dump({"type": "characters", "tokens": vocab, "pad_id": PAD, "bos_id": BOS, "eos_id": EOS,
                   "unk_id": UNK}, f, ensure_ascii=False, indent=1)
    heldout = dataset(1000, seed=2)
    answers = []
    for i in range(0, len(heldout), 100):
        chunk = heldout[i:i + 100]
        out = greedy(model, [encode(s, index) for s, _ in chunk], 16)
        answers += ["".join(vocab[t] for t in ids if t != EOS) for ids in out]
    correct = sum(a == t for a, (_, t) in zip(answers, heldout))
    with open(os.path.join(args.out, "heldout.tsv"), "w") as f:
        f.writelines(f"{s}\t{t}\n" for s, t in heldout)
    with open(os.path.join(args.out, "heldout_torch.txt"), "w") as f:
        f.writelines(a + "\n" for a in answers)
    print(f"held-out exact match (PyTorch, shipped fp16 weights): {correct}/{len(heldout)} = {correct / len(heldout):.1%}")


if __name__ == "__main__":
    main()
