"""Writes a torch-seq2seq model directory: config.json and model.safetensors.

    from seq2seq import Seq2Seq; from export import export
    export(model, "models/my-model")           # any Seq2Seq instance, float32
    export(model, "models/my-model", "F16")    # or half-precision weights

safetensors is written by hand (Debian has no python3-safetensors): a little-endian
u64 header length, a JSON header {name: {dtype, shape, data_offsets}}, raw data.
"""
import json
import os
import struct

import numpy as np

DTYPES = {"F32": np.float32, "F16": np.float16}


def write_safetensors(path, tensors, dtype="F32", metadata=None):
    header, blobs, offset = {}, [], 0
    for name in sorted(tensors):
        data = np.ascontiguousarray(tensors[name].astype(DTYPES[dtype])).tobytes()
        header[name] = {"dtype": dtype, "shape": list(tensors[name].shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    if metadata:
        header["__metadata__"] = metadata
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)  # keep the data 8-byte aligned
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)


def read_safetensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        a, b = info["data_offsets"]
        out[name] = np.frombuffer(data[a:b], dtype=DTYPES[info["dtype"]]).reshape(info["shape"])
    return out


def export(model, directory, dtype="F32"):
    os.makedirs(directory, exist_ok=True)
    config = dict(model.config)
    config["architecture"] = "torch-seq2seq"
    with open(os.path.join(directory, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    tensors = {k: v.detach().cpu().numpy() for k, v in model.state_dict().items()}
    write_safetensors(os.path.join(directory, "model.safetensors"), tensors, dtype, {"format": "pt"})
