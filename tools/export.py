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
    """{name: numpy array} of a .safetensors file; BF16 tensors (which numpy lacks) as float32."""
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        a, b = info["data_offsets"]
        if info["dtype"] == "BF16":  # the upper half of a float32
            array = (np.frombuffer(data[a:b], dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)
        elif info["dtype"] in DTYPES:
            array = np.frombuffer(data[a:b], dtype=DTYPES[info["dtype"]])
        else:
            raise ValueError(f"{path}: tensor {name} is {info['dtype']} (F32, F16 and BF16 are read)")
        out[name] = array.reshape(info["shape"])
    return out


def write_vocab(directory, tokens, pad_id=0, bos_id=1, eos_id=2, unk_id=3):
    """vocab.json of a character vocabulary, which `vkformer translate` and vkf_translate use:
    {"type": "characters", "tokens": [...], "pad_id": 0, "bos_id": 1, "eos_id": 2, "unk_id": 3}.
    A token is one UTF-8 character, except the special tokens, which are tokens of their own
    ("<pad>", "<bos>", "<eos>", "<unk>"); id i is tokens[i], and the list is no longer than
    the model's vocabulary."""
    tokens = list(tokens)
    if len(set(tokens)) != len(tokens):
        raise ValueError("a token is listed twice")
    for key, i in (("pad_id", pad_id), ("bos_id", bos_id), ("eos_id", eos_id), ("unk_id", unk_id)):
        if not 0 <= i < len(tokens) or len(tokens[i]) == 1:
            raise ValueError(f"{key} {i} must name a special token of its own, such as <unk>")
    with open(os.path.join(directory, "vocab.json"), "w", encoding="utf-8") as f:
        json.dump({"type": "characters", "tokens": tokens, "pad_id": pad_id, "bos_id": bos_id,
                   "eos_id": eos_id, "unk_id": unk_id}, f, ensure_ascii=False, indent=1)


def export(model, directory, dtype="F32", tokens=None):
    """config.json and model.safetensors (dtype "F32" or "F16"); with tokens, vocab.json too
    (write_vocab), so that `vkformer translate` can take text."""
    os.makedirs(directory, exist_ok=True)
    config = dict(model.config)
    config["architecture"] = "torch-seq2seq"
    with open(os.path.join(directory, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    tensors = {k: v.detach().cpu().numpy() for k, v in model.state_dict().items()}
    write_safetensors(os.path.join(directory, "model.safetensors"), tensors, dtype, {"format": "pt"})
    if tokens is not None:
        if len(tokens) > min(config["src_vocab_size"], config["tgt_vocab_size"]):
            raise ValueError("more tokens than the model's vocabulary")
        write_vocab(directory, tokens)
