"""Makes tests/model/image_patch_references.json: what torch's Conv2d with its stride equal
to its kernel (ViT's patch embedding, transformers' ViTPatchEmbeddings) computes, for
tests/model/encoder_graph_test.cpp, which runs vkformer's image_patches (the patches as
rows in (c, kh, kw) order) through the encoder graph's row input stage (a GEMM with the
weight [D, C, kh, kw] read as [D, C kh kw], the bias, and positions added).

Two images of 3 channels, 10 x 15, patches 5 x 5 (2 x 3 of them), D = 7; the output as
transformers lays it: conv(x).flatten(2).transpose(1, 2), [batch, patches, D], plus
positions [patches, D]. Run with Debian's torch:

  /usr/bin/python3 tools/image_patch_references/make_image_patch_references.py
"""
import json
from pathlib import Path

import torch

OUT = Path(__file__).resolve().parents[2] / "tests" / "model" / "image_patch_references.json"


def main():
    g = torch.Generator().manual_seed(11)
    batch, channels, height, width, kh, kw, d = 2, 3, 10, 15, 5, 5, 7
    images = torch.randn(batch, channels, height, width, generator=g)
    conv = torch.nn.Conv2d(channels, d, (kh, kw), stride=(kh, kw))
    with torch.no_grad():
        conv.weight.copy_(torch.randn(conv.weight.shape, generator=g) * 0.3)
        conv.bias.copy_(torch.randn(conv.bias.shape, generator=g))
        positions = torch.randn(height // kh * (width // kw), d, generator=g)
        out = conv(images).flatten(2).transpose(1, 2) + positions  # [batch, patches, D]
    OUT.write_text(json.dumps({
        "torch_version": torch.__version__, "batch": batch, "channels": channels, "height": height, "width": width,
        "patch": [kh, kw], "d": d, "images": images.flatten().tolist(), "weight": conv.weight.flatten().tolist(),
        "bias": conv.bias.tolist(), "positions": positions.flatten().tolist(), "out": out.flatten().tolist()}) + "\n")
    print("wrote", OUT)


if __name__ == "__main__":
    main()
