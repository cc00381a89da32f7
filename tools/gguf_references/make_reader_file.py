"""Makes tests/gguf/reader.gguf and tests/gguf/reader.json with the `gguf` package from
PyPI (llama.cpp's own Python reader and writer): the file is written by its GGUFWriter
and the JSON lists what its GGUFReader reads back, for tests/model/gguf_test.cpp to
compare with vkformer's reader. The file holds every metadata value type, arrays of
numbers, of strings and of arrays, general.alignment 64, and tensors of several ggml
types with awkward shapes (their bytes random: the reader checks places, not values).

  python3 -m venv /tmp/venv && /tmp/venv/bin/pip install gguf numpy
  /tmp/venv/bin/python tools/gguf_references/make_reader_file.py
"""
import json
from pathlib import Path

import gguf
import numpy as np
from gguf import GGMLQuantizationType as T
from gguf import GGUFReader, GGUFValueType, GGUFWriter

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "tests" / "gguf"


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / "reader.gguf"
    w = GGUFWriter(str(path), "llama")
    w.add_custom_alignment(64)  # (general.alignment, and the writer pads to it)
    w.add_string("general.name", "a GGUF reader's test ✓")
    w.add_uint8("test.u8", 200)
    w.add_int8("test.i8", -100)
    w.add_uint16("test.u16", 60000)
    w.add_int16("test.i16", -30000)
    w.add_uint32("test.u32", 4000000000)
    w.add_int32("test.i32", -2000000000)
    w.add_float32("test.f32", 1.5e-3)
    w.add_bool("test.bool", True)
    w.add_uint64("test.u64", 2**63 + 5)
    w.add_int64("test.i64", -(2**62))
    w.add_float64("test.f64", -2.25e100)
    w.add_array("test.floats", [0.5, -1.25, 3.0e10])
    w.add_array("test.ints", [1, -2, 3])
    w.add_array("test.strings", ["", "a", "<0x0A>", "héllo"])
    w.add_array("test.nested", [[1, 2], [3]])
    w.add_uint32("llama.block_count", 2)
    rng = np.random.default_rng(7)
    tensors = [("token_embd.weight", T.Q8_0, (3, 64)), ("blk.0.attn_q.weight", T.Q4_K, (2, 512)),
               ("output_norm.weight", T.F32, (17,)), ("blk.0.ffn_up.weight", T.F16, (5, 3)),
               ("blk.1.attn_v.weight", T.Q6_K, (1, 256))]
    for name, t, shape in tensors:
        rows, cols = (1, shape[0]) if len(shape) == 1 else shape
        block, size = gguf.GGML_QUANT_SIZES[t]
        raw = rng.integers(0, 256, size=(rows, cols // block * size), dtype=np.uint8)
        if t == T.F32:
            w.add_tensor(name, rng.standard_normal(shape).astype(np.float32))
        elif t == T.F16:
            w.add_tensor(name, rng.standard_normal(shape).astype(np.float16))
        else:
            w.add_tensor(name, raw, raw_dtype=t)  # (its shape in bytes: the values follow from the type)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()

    r = GGUFReader(str(path))
    meta = {}
    for f in r.fields.values():
        if f.name.startswith("GGUF."):
            continue
        t = f.types[0]
        if t == GGUFValueType.ARRAY:
            inner = f.types[1:]
            if inner[0] == GGUFValueType.STRING:
                v = [bytes(f.parts[i]).decode("utf-8") for i in f.data]
            elif inner[0] == GGUFValueType.ARRAY:
                v = "nested"
            else:
                v = [f.parts[i].tolist()[0] for i in f.data]
            meta[f.name] = {"type": "array", "element": inner[0].name.lower(), "value": v}
        elif t == GGUFValueType.STRING:
            meta[f.name] = {"type": "string", "value": bytes(f.parts[f.data[0]]).decode("utf-8")}
        else:
            v = f.parts[f.data[0]].tolist()[0]
            meta[f.name] = {"type": t.name.lower(), "value": str(v) if t in (GGUFValueType.UINT64, GGUFValueType.INT64) else v}
    listed = [{"name": t.name, "type": t.tensor_type.name, "shape": [int(x) for x in t.shape],
               "offset": int(t.data_offset), "bytes": int(t.n_bytes)} for t in r.tensors]
    data_start = min(x["offset"] for x in listed)
    for x in listed:
        x["offset"] -= data_start  # from the data's start, as the file stores it
    (OUT / "reader.json").write_text(json.dumps({"gguf_package": gguf.__version__ if hasattr(gguf, "__version__") else
                                                  "0.19.0", "version": int(r.fields["GGUF.version"].parts[-1][0]),
                                                  "data_start": data_start, "metadata": meta, "tensors": listed},
                                                 indent=1, ensure_ascii=False) + "\n")
    print("wrote", path, path.stat().st_size, "bytes")


if __name__ == "__main__":
    main()
