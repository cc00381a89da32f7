"""A pure-Python stand-in for the `safetensors` package, for making vkformer's Hugging Face
references on Debian 12, which packages no `safetensors` (its wheel carries a Rust core).
It implements only what `transformers` calls when it saves and loads PyTorch checkpoints:
`safe_open` (keys, metadata, get_tensor, get_slice) and `torch.save_file` / `torch.load_file`.
The format is the published one: an 8-byte little-endian header length, a JSON header
{name: {dtype, shape, data_offsets}, "__metadata__": {str: str}}, then the raw bytes.
On a machine with the real package, leave this directory off PYTHONPATH."""
__version__ = "0.4.3"

import json
import struct

from .torch import _DTYPES, _read_header


class _Slice:
    def __init__(self, tensor):
        self._tensor = tensor

    def get_shape(self):
        return list(self._tensor.shape)

    def __getitem__(self, index):
        return self._tensor[index]


class safe_open:
    def __init__(self, filename, framework="pt", device="cpu"):
        if framework not in ("pt", "torch"):
            raise ValueError(f"this stand-in reads only PyTorch tensors, not {framework!r}")
        self._filename = filename
        self._device = device
        self._header, self._data_start = _read_header(filename)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def keys(self):
        return [k for k in self._header if k != "__metadata__"]

    def metadata(self):
        return self._header.get("__metadata__")

    def get_tensor(self, name):
        from .torch import _tensor_from
        return _tensor_from(self._filename, self._header[name], self._data_start).to(self._device)

    def get_slice(self, name):
        return _Slice(self.get_tensor(name))
