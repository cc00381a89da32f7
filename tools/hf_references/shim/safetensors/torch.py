"""`safetensors.torch` of the stand-in: save_file, load_file, save, load."""
import json
import os
import struct

import numpy
import torch

_DTYPES = {
    torch.float64: "F64", torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16",
    torch.int64: "I64", torch.int32: "I32", torch.int16: "I16", torch.int8: "I8",
    torch.uint8: "U8", torch.bool: "BOOL",
}
_TORCH = {v: k for k, v in _DTYPES.items()}


def _read_header(filename):
    with open(filename, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
    return header, 8 + n


def _tensor_from(filename, info, data_start):
    begin, end = info["data_offsets"]
    with open(filename, "rb") as f:
        f.seek(data_start + begin)
        raw = bytearray(f.read(end - begin))
    dtype = _TORCH[info["dtype"]]
    if end == begin:
        return torch.empty(info["shape"], dtype=dtype)
    return torch.frombuffer(raw, dtype=dtype).reshape(info["shape"]).clone()


def _serialize(tensors, metadata=None):
    header, blobs, offset = {}, [], 0
    for name in sorted(tensors):
        t = tensors[name].detach().contiguous().cpu()
        raw = t.reshape(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b""
        header[name] = {"dtype": _DTYPES[t.dtype], "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    if metadata is not None:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + b"".join(blobs)


def save_file(tensors, filename, metadata=None):
    with open(filename, "wb") as f:
        f.write(_serialize(tensors, metadata))


def save(tensors, metadata=None):
    return _serialize(tensors, metadata)


def load_file(filename, device="cpu"):
    header, start = _read_header(filename)
    return {k: _tensor_from(filename, v, start).to(device) for k, v in header.items()
            if k != "__metadata__"}


def storage_ptr(tensor):
    """Where the tensor's storage starts: transformers uses it to find tied weights."""
    try:
        return tensor.untyped_storage().data_ptr()
    except AttributeError:
        return tensor.storage().data_ptr()


def storage_size(tensor):
    """The storage's size in bytes."""
    try:
        return tensor.untyped_storage().nbytes()
    except AttributeError:
        return tensor.storage().size() * tensor.element_size()
