#!/usr/bin/python3
"""`vkformer bench model` on a model whose batch of 16 cannot fit the device: that row is
reported as skipped with its reason, and the rest of the run (prompt processing, batches
1 and 4) is measured and the report valid. The model is made here (random fp16 weights,
a tied Llama whose gated feed-forward is 50,000 wide: 16 sequences' 15 positions of its
[rows, 3 FFN] activations are 144 MB, more than one binding of lavapipe's 128 MiB, where
4 sequences' are 36 MB) and removed after.
Usage: bench_skips_what_cannot_fit.py VKFORMER SOURCE_DIR WORK_DIR"""
import json
import os
import shutil
import struct
import subprocess
import sys

import numpy as np

VOCAB, D, FFN = 1000, 8, 50_000


def write_model(path):
    os.makedirs(path, exist_ok=True)
    config = {"model_type": "llama", "hidden_size": D, "intermediate_size": FFN, "num_hidden_layers": 1,
              "num_attention_heads": 1, "num_key_value_heads": 1, "vocab_size": VOCAB,
              "max_position_embeddings": 64, "tie_word_embeddings": True, "rms_norm_eps": 1e-5,
              "bos_token_id": 1, "eos_token_id": 2}
    with open(os.path.join(path, "config.json"), "w") as f:
        json.dump(config, f)
    rng = np.random.default_rng(3)
    shapes = {"model.embed_tokens.weight": (VOCAB, D), "model.norm.weight": (D,),
              "model.layers.0.input_layernorm.weight": (D,), "model.layers.0.post_attention_layernorm.weight": (D,),
              "model.layers.0.self_attn.q_proj.weight": (D, D), "model.layers.0.self_attn.k_proj.weight": (D, D),
              "model.layers.0.self_attn.v_proj.weight": (D, D), "model.layers.0.self_attn.o_proj.weight": (D, D),
              "model.layers.0.mlp.gate_proj.weight": (FFN, D), "model.layers.0.mlp.up_proj.weight": (FFN, D),
              "model.layers.0.mlp.down_proj.weight": (D, FFN)}
    header, blobs, offset = {}, [], 0
    for name, shape in shapes.items():
        a = (np.ones(shape) if "norm" in name else rng.normal(0, 0.3, shape)).astype(np.float16)
        header[name] = {"dtype": "F16", "shape": list(shape), "data_offsets": [offset, offset + a.nbytes]}
        blobs.append(a.tobytes())
        offset += a.nbytes
    text = json.dumps(header).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(os.path.join(path, "model.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text)
        for b in blobs:
            f.write(b)


def main():
    vkformer, source, work = sys.argv[1:4]
    model = os.path.join(work, "bench_wide_ffn")
    report = os.path.join(work, "bench_wide_ffn.json")
    try:
        write_model(model)
        run = subprocess.run([vkformer, "bench", "model", "--quick", "--model", model, "--json-out", report],
                             capture_output=True, text=True, timeout=240)
        assert run.returncode == 0, f"exit {run.returncode}: {run.stderr}"
        assert "validation" not in run.stderr.lower(), run.stderr
        greedy = json.load(open(report))["runs"][0]["model"]["greedy"]
        by_batch = {r["batch"]: r for r in greedy}
        assert "skipped" in by_batch[16] and "in one buffer" in by_batch[16]["skipped"], by_batch[16]
        assert by_batch[1]["tokens_per_second"] > 0 and by_batch[4]["tokens_per_second"] > 0, greedy
        assert "skipped" in run.stdout, run.stdout
        subprocess.run(["/usr/bin/python3", os.path.join(source, "tools", "validate_bench.py"),
                        os.path.join(source, "docs", "bench.schema.json"), report], check=True)
        print("batch 16 skipped:", by_batch[16]["skipped"])
    finally:
        shutil.rmtree(model, ignore_errors=True)


if __name__ == "__main__":
    main()
