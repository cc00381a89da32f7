#!/usr/bin/python3
"""The forecasting sample: a patch transformer over a daily series (the classic
teaching example). A 30-day window is cut into 9 overlapping patches of 6 days
(stride 3); each patch is embedded linearly, sinusoidal positions are added, a
transformer encoder reads them, and a linear head forecasts the next `horizon` days.
Windows are normalised by their own mean and standard deviation (undone on output).

    /usr/bin/python3 tools/forecast.py [--out samples/forecast] [--steps 1500]

Trains on a synthetic seasonal series with noise (weekly and yearly cycles, a trend),
ships config.json + model.safetensors, the held-out test series (test_series.txt),
and PyTorch's forecasts for its windows (test_torch.txt), and prints the model's
error beside a naive last-value forecast.
"""
import argparse
import json
import math
import os
import sys
import warnings

import numpy as np
import torch
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from export import write_safetensors  # noqa: E402
from seq2seq import sinusoidal_positions  # noqa: E402


class PatchForecaster(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.config = dict(c)
        self.num_patches = (c["window"] - c["patch_len"]) // c["stride"] + 1
        self.patch_embed = nn.Linear(c["patch_len"], c["d_model"])
        layer = nn.TransformerEncoderLayer(c["d_model"], c["nhead"], c["dim_feedforward"], 0.0, c["activation"],
                                           batch_first=True, norm_first=c["norm_first"], layer_norm_eps=c["layer_norm_eps"])
        self.encoder = nn.TransformerEncoder(layer, c["num_layers"], norm=nn.LayerNorm(c["d_model"], eps=c["layer_norm_eps"]),
                                             enable_nested_tensor=False)
        self.head = nn.Linear(self.num_patches * c["d_model"], c["horizon"])
        self.register_buffer("pe", sinusoidal_positions(self.num_patches, c["d_model"]), persistent=False)

    def forward(self, x):  # x [B, window] -> [B, horizon]
        mean = x.mean(1, keepdim=True)
        std = x.std(1, unbiased=False, keepdim=True) + 1e-5
        patches = ((x - mean) / std).unfold(1, self.config["patch_len"], self.config["stride"])
        z = self.encoder(self.patch_embed(patches) + self.pe)
        return self.head(z.flatten(1)) * std + mean


def series(days, seed):
    rng = np.random.default_rng(seed)
    t = np.arange(days)
    return (20 + 0.01 * t + 5 * np.sin(2 * math.pi * t / 7) + 8 * np.sin(2 * math.pi * t / 365.25)
            + rng.normal(0, 1.0, days)).astype(np.float32)


def windows(s, window, horizon):
    n = len(s) - window - horizon + 1
    x = np.stack([s[i:i + window] for i in range(n)])
    y = np.stack([s[i + window:i + window + horizon] for i in range(n)])
    return torch.tensor(x), torch.tensor(y)


def main():
    warnings.filterwarnings("ignore")
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="samples/forecast")
    ap.add_argument("--steps", type=int, default=1500)
    args = ap.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    c = {"architecture": "torch-patch-forecaster", "window": 30, "patch_len": 6, "stride": 3, "horizon": 7,
         "d_model": 32, "nhead": 4, "num_layers": 2, "dim_feedforward": 64, "activation": "gelu",
         "norm_first": True, "layer_norm_eps": 1e-5}
    model = PatchForecaster(c)
    x, y = windows(series(3000, 1), c["window"], c["horizon"])
    opt = torch.optim.AdamW(model.parameters(), lr=2e-3)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, args.steps)
    g = torch.Generator().manual_seed(0)
    for step in range(args.steps):
        idx = torch.randint(0, len(x), (128,), generator=g)
        loss = nn.functional.mse_loss(model(x[idx]), y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        if step % 250 == 0 or step == args.steps - 1:
            print(f"step {step:5d}  mse {loss.item():.4f}", flush=True)
    model.eval()
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "config.json"), "w") as f:
        json.dump(c, f, indent=2)
    tensors = {k: v.detach().numpy() for k, v in model.state_dict().items()}
    write_safetensors(os.path.join(args.out, "model.safetensors"), tensors, "F32", {"format": "pt"})
    test = series(400, 2)
    np.savetxt(os.path.join(args.out, "test_series.txt"), test, fmt="%.6f")
    tx, ty = windows(test, c["window"], c["horizon"])
    with torch.no_grad():
        pred = model(tx)
    np.savetxt(os.path.join(args.out, "test_torch.txt"), pred.numpy(), fmt="%.6f")
    mae = (pred - ty).abs().mean().item()
    naive = (tx[:, -1:] - ty).abs().mean().item()
    print(f"test MAE: model {mae:.3f}, naive last value {naive:.3f} over {len(tx)} windows")


if __name__ == "__main__":
    main()
