#!/usr/bin/env python3
"""The same random Llama for vkformer and for llama.cpp, to measure them side by side and
to check vkformer's choice of block types against llama-quantize's.

    # a random LlamaForCausalLM (save_pretrained, fp16), e.g. TinyLlama-1.1B's widths with 4 layers
    PYTHONPATH=... /usr/bin/python3 tools/peer_llama.py model OUT --hidden 2048 --ffn 5632 \\
        --layers 4 --heads 32 --kv-heads 4 --vocab 32000
    # the same weights as one GGUF file (F16), llama.cpp's layout
    PYTHONPATH=... /usr/bin/python3 tools/peer_llama.py gguf OUT OUT.gguf
    # llama-quantize's per-tensor types, from its log (llama-quantize OUT.gguf Q.gguf Q4_K_M 2>&1 | tee log)
    /usr/bin/python3 tools/peer_llama.py types log > types.json

`gguf` writes what llama.cpp's convert_hf_to_gguf.py writes for a Llama, from our reading
of the format (the `gguf` package's writer; no llama.cpp code): the hyperparameters under
`llama.*`, the tensors under llama.cpp's names, Q's and K's rows permuted per head from
transformers' rotate-halves order to llama.cpp's adjacent pairs ([2, d/2] -> [d/2, 2]; K
with the K/V head count), and a stand-in SentencePiece vocabulary of the model's size
(tokens "<unk>", "<s>", "</s>", then "t3", "t4", ...: speed runs need token ids, not text).
llama.cpp itself is built by hand outside this repository; nothing here builds it.
"""
import argparse
import json
import re
import sys
from pathlib import Path

import numpy as np


def model(args):
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM
    torch.manual_seed(args.seed)
    cfg = LlamaConfig(vocab_size=args.vocab, hidden_size=args.hidden, intermediate_size=args.ffn,
                      num_hidden_layers=args.layers, num_attention_heads=args.heads, num_key_value_heads=args.kv_heads,
                      max_position_embeddings=2048, rms_norm_eps=1e-5, bos_token_id=1, eos_token_id=2,
                      tie_word_embeddings=args.tied, torch_dtype="float16")
    m = LlamaForCausalLM(cfg).eval()
    with torch.no_grad():
        for name, p in m.named_parameters():
            if "norm" in name:
                p.copy_(1 + 0.1 * torch.randn_like(p))
    m.half().save_pretrained(args.out)
    print("wrote", args.out)


def permute(w, heads):
    return w.reshape(heads, 2, w.shape[0] // heads // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def gguf(args):
    import gguf as g
    from safetensors.numpy import load_file
    src = Path(args.model)
    cfg = json.load(open(src / "config.json"))
    tensors = {}
    for f in sorted(src.glob("*.safetensors")):
        tensors.update(load_file(f))
    heads, kv = cfg["num_attention_heads"], cfg.get("num_key_value_heads", cfg["num_attention_heads"])
    w = g.GGUFWriter(args.out, "llama")
    w.add_name(src.name)
    w.add_context_length(cfg.get("max_position_embeddings", 2048))
    w.add_embedding_length(cfg["hidden_size"])
    w.add_block_count(cfg["num_hidden_layers"])
    w.add_feed_forward_length(cfg["intermediate_size"])
    w.add_head_count(heads)
    w.add_head_count_kv(kv)
    w.add_layer_norm_rms_eps(cfg.get("rms_norm_eps", 1e-5))
    w.add_rope_freq_base(cfg.get("rope_theta", 10000.0))
    w.add_rope_dimension_count(cfg["hidden_size"] // heads)
    w.add_file_type(1)  # mostly F16
    vocab = cfg["vocab_size"]
    w.add_tokenizer_model("llama")
    w.add_token_list(["<unk>", "<s>", "</s>"] + [f"t{i}" for i in range(3, vocab)])
    w.add_token_scores([0.0] * 3 + [-float(i) for i in range(3, vocab)])
    w.add_token_types([2, 3, 3] + [1] * (vocab - 3))
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    names = {"model.embed_tokens.weight": "token_embd.weight", "model.norm.weight": "output_norm.weight",
             "lm_head.weight": "output.weight"}
    per_layer = {"self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k", "self_attn.v_proj": "attn_v",
                 "self_attn.o_proj": "attn_output", "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up",
                 "mlp.down_proj": "ffn_down", "input_layernorm": "attn_norm", "post_attention_layernorm": "ffn_norm"}
    for name, t in tensors.items():
        m = re.match(r"model\.layers\.(\d+)\.(.+)\.weight$", name)
        if m:
            out = f"blk.{m.group(1)}.{per_layer[m.group(2)]}.weight"
            if m.group(2) == "self_attn.q_proj":
                t = permute(t, heads)
            elif m.group(2) == "self_attn.k_proj":
                t = permute(t, kv)
        else:
            out = names[name]
        # 1-D tensors in fp32 (as the converter keeps norms), the rest in fp16
        w.add_tensor(out, t.astype(np.float32 if t.ndim == 1 else np.float16))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    print("wrote", args.out)


def types(args):
    """llama-quantize's log lines '[ i/ n] name - [ cols, rows, ...], type = f16, converting to q4_K ...'
    (or 'size = ...' for a tensor left as it is) as {name: {"cols": c, "type": t}}."""
    out = {}
    for line in open(args.log, errors="replace"):
        m = re.search(r"\]\s+(\S+\.weight)\s+- \[\s*(\d+),\s*(\d+).*?type =\s+(\w+)", line)
        if not m:
            continue
        name, cols, rows, src = m.group(1), int(m.group(2)), int(m.group(3)), m.group(4)
        to = re.search(r"converting to (\w+)", line)
        out[name] = {"cols": cols, "rows": rows, "type": (to.group(1) if to else src).lower()}
    json.dump(out, sys.stdout, indent=1, sort_keys=True)
    print()


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("model")
    m.add_argument("out")
    for k, v in (("hidden", 2048), ("ffn", 5632), ("layers", 4), ("heads", 32), ("kv-heads", 4), ("vocab", 32000),
                 ("seed", 49)):
        m.add_argument("--" + k, type=int, default=v)
    m.add_argument("--tied", action="store_true")
    g = sub.add_parser("gguf")
    g.add_argument("model")
    g.add_argument("out")
    t = sub.add_parser("types")
    t.add_argument("log")
    args = ap.parse_args()
    {"model": model, "gguf": gguf, "types": types}[args.cmd](args)


if __name__ == "__main__":
    main()
