#!/usr/bin/python3
"""Greedy decoding speed of a Transformer-base-sized torch-seq2seq (d_model 512, 6+6
layers, FFN 2048, 8 heads, vocabulary 32,000; random weights), in PyTorch and in
vkformer, measured in one run on this machine.

    /usr/bin/python3 tools/bench_transformer_base.py [--tokens 32] [--vkformer build/vkformer] [--precision fp32]
        [--torch-device cpu|cuda] [--batch B]

Encode latency and per-token decode speed are printed separately for both. The PyTorch
baseline decodes as a fast PyTorch program would: a KV cache per layer (each step
projects only the newest position's self-attention keys and values and appends them;
the cross-attention keys and values are projected once from the encoder output) and
the generator applied to the last position only, with nn.Transformer's own weights and
modules. Its tokens are checked against nn.Transformer's uncached decoder (the module
as written) and against vkformer's. On CPU PyTorch runs at every thread count (the
fastest is the baseline); with --torch-device cuda it runs eagerly on the GPU in fp32
and fp16, synchronised around each phase, and also as the fastest PyTorch peer we know:
a static KV cache, one whole decoder step (embedding, every layer, generator, argmax,
position advance) captured as a CUDA graph and replayed once per token with no host
read in between (fp32 and fp16; its tokens are checked against the eager cached loop).
--batch B decodes B different sources of the same length at once (tokens/s counts
every sequence's tokens). --rounds N (default 3) alternates N rounds of every PyTorch
configuration and of vkformer and prints each one's median (on these 2-core VMs one
run's figure moves by up to 20%), with the range of the per-round ratios.
"""
import argparse
import json
import os
from statistics import median
import subprocess
import sys
import time
import warnings

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from export import export  # noqa: E402
from seq2seq import Seq2Seq  # noqa: E402

CONFIG = {"architecture": "torch-seq2seq", "d_model": 512, "nhead": 8, "num_encoder_layers": 6,
          "num_decoder_layers": 6, "dim_feedforward": 2048, "activation": "relu", "norm_first": False,
          "layer_norm_eps": 1e-5, "src_vocab_size": 32000, "tgt_vocab_size": 32000, "max_position": 512,
          "scale_embedding": True, "pad_id": 0, "bos_id": 1, "eos_id": 2}


def _heads(x, n):
    """[B, L, D] -> [B, n, L, D / n]"""
    b, l, d = x.shape
    return x.view(b, l, n, d // n).transpose(1, 2)


def _attend(q, k, v, mask=None):
    """softmax(q k^T / sqrt(d) + mask) v over heads; [B, n, Lq, d] -> [B, Lq, n * d]"""
    s = q @ k.transpose(-1, -2) / (q.shape[-1] ** 0.5)
    if mask is not None:
        s = s + mask
    o = torch.softmax(s, -1) @ v
    return o.transpose(1, 2).reshape(o.shape[0], o.shape[2], -1)


def decoder_layers(model, x, self_attn, cross_attn):
    """nn.TransformerDecoder's layers at the newest position, x [B, 1, D], with the
    caller's self-attention (its KV cache) and cross-attention: self_attn(i, layer, h)
    and cross_attn(i, layer, h), h the sublayer's input."""
    for i, layer in enumerate(model.transformer.decoder.layers):
        def ffn(h):
            return layer.linear2(layer.activation(layer.linear1(h)))

        if layer.norm_first:
            x = x + self_attn(i, layer, layer.norm1(x))
            x = x + cross_attn(i, layer, layer.norm2(x))
            x = x + ffn(layer.norm3(x))
        else:
            x = layer.norm1(x + self_attn(i, layer, x))
            x = layer.norm2(x + cross_attn(i, layer, x))
            x = layer.norm3(x + ffn(x))
    if model.transformer.decoder.norm is not None:
        x = model.transformer.decoder.norm(x)
    return x


def cross_attention(layer, h, n, cross, mask):
    """A decoder layer's cross-attention from the newest position over the encoder output's
    K and V (projected once): h [B, 1, D] -> [B, 1, D]."""
    d = h.shape[-1]
    w, b = layer.multihead_attn.in_proj_weight, layer.multihead_attn.in_proj_bias
    q = _heads(torch.nn.functional.linear(h, w[:d], b[:d]), n)
    return layer.multihead_attn.out_proj(_attend(q, *cross, mask))


class CachedDecoder:
    """nn.TransformerDecoder's computation, one position per step, with a KV cache: what a
    fast PyTorch greedy loop does (nn.Transformer itself has no cache)."""

    def __init__(self, model, memory, pad):
        self.model, self.n = model, model.config["nhead"]
        d = model.config["d_model"]
        self.mask = torch.zeros(pad.shape, dtype=memory.dtype, device=memory.device).masked_fill(pad, float("-inf"))[:, None, None, :]
        self.cross, self.cache = [], []
        for layer in model.transformer.decoder.layers:
            w, b = layer.multihead_attn.in_proj_weight, layer.multihead_attn.in_proj_bias
            kv = torch.nn.functional.linear(memory, w[d:], b[d:])  # cross-attention K and V, once
            self.cross.append((_heads(kv[..., :d], self.n), _heads(kv[..., d:], self.n)))
            self.cache.append(None)

    def step(self, x):
        """x: [B, 1, D], the embedded newest position -> the decoder's output at it."""
        n = self.n

        def self_attn(i, layer, h):
            d = h.shape[-1]
            qkv = torch.nn.functional.linear(h, layer.self_attn.in_proj_weight, layer.self_attn.in_proj_bias)
            q, k, v = (_heads(qkv[..., j * d:(j + 1) * d], n) for j in range(3))
            if self.cache[i] is not None:
                k, v = torch.cat([self.cache[i][0], k], 2), torch.cat([self.cache[i][1], v], 2)
            self.cache[i] = (k, v)  # the newest position attends to every earlier one: no causal mask
            return layer.self_attn.out_proj(_attend(q, k, v))

        return decoder_layers(self.model, x, self_attn,
                              lambda i, layer, h: cross_attention(layer, h, n, self.cross[i], self.mask))


class GraphDecoder:
    """Greedy decoding with a static KV cache, one step captured as a CUDA graph: the
    peer to beat on a GPU. Everything a step needs lives in fixed tensors (the newest
    token, its position, the caches, the ids so far), so replaying the graph advances
    decoding by one token without the host."""

    def __init__(self, model, batch, tokens):
        c, d, n = model.config, model.config["d_model"], model.config["nhead"]
        dev, dt = model.pe.device, next(model.parameters()).dtype
        self.model, self.n, self.tokens = model, n, tokens
        self.scale = d ** 0.5 if c["scale_embedding"] else 1.0
        layers = len(model.transformer.decoder.layers)
        self.k = [torch.zeros(batch, n, tokens, d // n, device=dev, dtype=dt) for _ in range(layers)]  # [B, n, T, dh]
        self.v = [torch.zeros_like(k) for k in self.k]
        self.tok = torch.full((batch,), c["bos_id"], device=dev, dtype=torch.long)  # [B] the newest token
        self.pos = torch.zeros(1, device=dev, dtype=torch.long)  # [1] its position
        self.ids = torch.zeros(batch, tokens, device=dev, dtype=torch.long)  # [B, T] generated ids
        self.steps = torch.arange(tokens, device=dev)
        self.cross, self.mask, self.graph = None, None, None

    def start(self, memory, pad):
        """A new batch's encoder output: the cross-attention K and V, once, into fixed tensors."""
        d = memory.shape[-1]
        cross = []
        for layer in self.model.transformer.decoder.layers:
            w, b = layer.multihead_attn.in_proj_weight, layer.multihead_attn.in_proj_bias
            kv = torch.nn.functional.linear(memory, w[d:], b[d:])
            cross.append((_heads(kv[..., :d], self.n), _heads(kv[..., d:], self.n)))
        mask = torch.zeros(pad.shape, dtype=memory.dtype, device=memory.device).masked_fill(pad, float("-inf"))[:, None, None, :]
        if self.cross is None:
            self.cross = [(k.contiguous(), v.contiguous()) for k, v in cross]
            self.mask = mask
        else:
            for (k, v), (k2, v2) in zip(self.cross, cross):
                k.copy_(k2)
                v.copy_(v2)
            self.mask.copy_(mask)
        self.tok.fill_(self.model.config["bos_id"])
        self.pos.zero_()

    def step(self):
        m, n = self.model, self.n
        x = m.tgt_embed(self.tok[:, None]) * self.scale + m.pe.index_select(0, self.pos)  # [B, 1, D]
        causal = torch.zeros(self.tokens, device=x.device, dtype=x.dtype).masked_fill(self.steps > self.pos, float("-inf"))

        def self_attn(i, layer, h):  # this position's K and V into the fixed cache, then over rows <= pos
            d = h.shape[-1]
            qkv = torch.nn.functional.linear(h, layer.self_attn.in_proj_weight, layer.self_attn.in_proj_bias)
            q, k, v = (_heads(qkv[..., j * d:(j + 1) * d], n) for j in range(3))
            self.k[i].index_copy_(2, self.pos, k)
            self.v[i].index_copy_(2, self.pos, v)
            return layer.self_attn.out_proj(_attend(q, self.k[i], self.v[i], causal))

        x = decoder_layers(m, x, self_attn, lambda i, layer, h: cross_attention(layer, h, n, self.cross[i], self.mask))
        nxt = m.generator(x)[:, -1].argmax(-1)  # [B]
        self.tok.copy_(nxt)
        self.ids.index_copy_(1, self.pos, nxt[:, None])
        self.pos.add_(1)

    def capture(self):
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):  # warm-up off the default stream, as CUDA graph capture asks
            for _ in range(3):
                self.step()
        torch.cuda.current_stream().wait_stream(s)
        self.pos.zero_()
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            self.step()


@torch.no_grad()
def graph_greedy(model, src_ids, tokens, device):
    """Greedy decoding by CUDA-graph replay, timed: (ids of every sequence, encode ms, decode tokens/s)."""
    src = torch.tensor(src_ids, device=device)
    dec = GraphDecoder(model, len(src_ids), tokens)
    dec.start(*model.encode(src))
    dec.capture()
    for _ in range(2):  # untimed: the graph's first replays
        dec.start(*model.encode(src))
        for _ in range(tokens):
            dec.graph.replay()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    memory, pad = model.encode(src)
    torch.cuda.synchronize()
    t1 = time.perf_counter()
    dec.start(memory, pad)
    for _ in range(tokens):
        dec.graph.replay()
    ids = dec.ids.tolist()  # the host reads the tokens once, at the end
    t2 = time.perf_counter()
    return ids, (t1 - t0) * 1e3, len(src_ids) * tokens / (t2 - t1)


@torch.no_grad()
def uncached_greedy(model, src_ids, tokens, device):
    """nn.Transformer as written: the decoder re-run over the whole prefix each step."""
    c = model.config
    memory, pad = model.encode(torch.tensor(src_ids, device=device))
    tgt = torch.full((len(src_ids), 1), c["bos_id"], device=device)
    out = []
    for _ in range(tokens):
        causal = torch.nn.Transformer.generate_square_subsequent_mask(tgt.shape[1]).to(device=device, dtype=memory.dtype)
        h = model.transformer.decoder(model.embed(model.tgt_embed, tgt), memory, tgt_mask=causal,
                                      memory_key_padding_mask=pad)
        nxt = model.generator(h)[:, -1].argmax(-1)
        out.append(int(nxt[0]))
        tgt = torch.cat([tgt, nxt[:, None]], 1)
    return out


@torch.no_grad()
def timed_greedy(model, src_ids, tokens, device):
    """Greedy decoding as seq2seq.greedy does it, timed: (the first sequence's ids, encode ms,
    decode tokens/s of every sequence together)."""
    c = model.config
    sync = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)
    src = torch.tensor(src_ids, device=device)
    sync()
    t0 = time.perf_counter()
    memory, pad = model.encode(src)
    sync()
    t1 = time.perf_counter()
    decoder = CachedDecoder(model, memory, pad)
    scale = model.config["d_model"] ** 0.5 if c["scale_embedding"] else 1.0
    nxt = torch.full((len(src_ids),), c["bos_id"], device=device)
    out = []
    for t in range(tokens):
        x = model.tgt_embed(nxt[:, None]) * scale + model.pe[t:t + 1]  # the newest position only
        nxt = model.generator(decoder.step(x))[:, -1].argmax(-1)  # the generator on that position only
        out.append(int(nxt[0]))  # the host loop reads each token, as a user's must
    sync()
    t2 = time.perf_counter()
    return out, (t1 - t0) * 1e3, len(src_ids) * len(out) / (t2 - t1)


def main():
    warnings.filterwarnings("ignore")
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokens", type=int, default=32)
    ap.add_argument("--source-length", type=int, default=24)
    ap.add_argument("--vkformer", default="build/vkformer")
    ap.add_argument("--precision", default="fp32")
    ap.add_argument("--model-dir", default="build/transformer-base")
    ap.add_argument("--torch-device", default="cpu", help="cpu, or cuda for PyTorch on the GPU")
    ap.add_argument("--batch", type=int, default=1, help="sequences decoded at once (different sources)")
    ap.add_argument("--rounds", type=int, default=3, help="alternating rounds of each configuration; medians are printed")
    args = ap.parse_args()
    if not 1 <= args.batch <= 1024 or not 1 <= args.tokens <= 500 or not 1 <= args.source_length <= 512:
        sys.exit("--batch must be 1..1024, --tokens 1..500, --source-length 1..512")
    if not 1 <= args.rounds <= 20:
        sys.exit("--rounds must be 1..20")
    torch.manual_seed(0)
    model = Seq2Seq(CONFIG).eval()
    with torch.no_grad():  # keep EOS out of the way so both decode the full length
        model.generator.bias[CONFIG["eos_id"]] = -1e4
    if not os.path.exists(os.path.join(args.model_dir, "model.safetensors")):
        export(model, args.model_dir)
    src = [[(7 * i + 13 * b) % 31000 + 3 for i in range(args.source_length)] for b in range(args.batch)]

    # PyTorch: on CPU at every thread count (the fastest is the baseline); on CUDA in fp32 and fp16.
    # Each configuration and vkformer once per round, alternating; their medians are compared.
    rounds, graph_ids, vk_rounds = {}, {}, []  # rounds: configuration -> [(first sequence's ids, encode ms, tokens/s)]
    models = {}
    if args.torch_device != "cpu":
        for name, dtype in (("fp32", torch.float32), ("fp16", torch.float16)):
            m = Seq2Seq(CONFIG).eval()
            m.load_state_dict(model.state_dict())
            models[name] = m.to(device=args.torch_device, dtype=dtype)
    for r in range(args.rounds):
        if args.torch_device == "cpu":
            for threads in range(1, (os.cpu_count() or 1) + 1):
                torch.set_num_threads(threads)
                timed_greedy(model, src, 2, "cpu")  # warm-up
                rounds.setdefault(f"{threads} threads, fp32", []).append(timed_greedy(model, src, args.tokens, "cpu"))
        else:
            for name, m in models.items():
                timed_greedy(m, src, 2, args.torch_device)  # warm-up
                rounds.setdefault(f"{args.torch_device}, {name}", []).append(
                    timed_greedy(m, src, args.tokens, args.torch_device))
                ids, enc, tps = graph_greedy(m, src, args.tokens, args.torch_device)
                rounds.setdefault(f"{args.torch_device}, {name}, CUDA graph", []).append((ids[0], enc, tps))
                graph_ids.setdefault(name, ids)
        out = subprocess.check_output([args.vkformer, "generate", "--model", args.model_dir, "--src-ids",
                                       ";".join(",".join(map(str, s)) for s in src), "--max-new-tokens", str(args.tokens),
                                       "--json", "--warmup", "--precision", args.precision])
        vk_rounds.append(json.loads(out))

    # Per configuration: (its first round's first-sequence ids, median encode ms, median tokens/s).
    torch_runs = {name: (runs[0][0], median([x[1] for x in runs]), median([x[2] for x in runs]))
                  for name, runs in rounds.items()}
    ref = next(iter(torch_runs.values()))[0]  # fp32 tokens
    torch.set_num_threads(os.cpu_count() or 1)
    module_ids = uncached_greedy(model, src[:1], args.tokens, "cpu")  # nn.Transformer as written, no cache
    best = max(torch_runs, key=lambda k: torch_runs[k][2])
    vk = vk_rounds[0]
    vk_tps = median([v["decode_tokens_per_second"] for v in vk_rounds])
    vk_enc = median([v["encode_ms"] for v in vk_rounds])
    print(f"Transformer-base greedy decoding, batch {args.batch}, {args.tokens} tokens from a {args.source_length}-token source"
          f" (medians of {args.rounds} alternating rounds)")
    print(f"  {'':44s} {'encode ms':>10s} {'decode tokens/s':>16s} {'ms/token':>9s}")
    for name, (_, enc, tps) in torch_runs.items():
        print(f"  {'PyTorch ' + torch.__version__ + ' (' + name + ')':44s} {enc:10.2f} {tps:16.1f} {1e3 / tps:9.3f}")
    print(f"  {'vkformer on ' + vk['device'] + ' (' + args.precision + ')':44.44s} {vk_enc:10.2f} {vk_tps:16.1f} "
          f"{1e3 / vk_tps:9.3f}")
    print(f"  vkformer counters per token: {vk['counters']}")
    per_round = [v["decode_tokens_per_second"] / run[2] for v, run in zip(vk_rounds, rounds[best])]
    print(f"  ratio vkformer / PyTorch ({best}), decode: {vk_tps / torch_runs[best][2]:.2f}"
          + (f" (per round {min(per_round):.2f} to {max(per_round):.2f})" if args.rounds > 1 else ""))
    print(f"  cached PyTorch baseline gives nn.Transformer's own tokens: {ref == module_ids}")
    print(f"  vkformer gives the same tokens as PyTorch fp32 (first sequence): {vk['ids'][0] == ref}"
          + ("" if all(v["ids"] == vk["ids"] for v in vk_rounds) else " (but its rounds disagree)"))
    for name, ids in graph_ids.items():
        same = sum(a == b for a, b in zip(ids, vk["ids"]))
        print(f"  CUDA-graph PyTorch {name}: first sequence as the eager loop: {ids[0] == ref}; "
              f"sequences equal to vkformer's: {same} of {len(ids)}")
    if ref != module_ids:
        sys.exit("the cached baseline does not reproduce nn.Transformer's tokens")
    if "fp32" in graph_ids and graph_ids["fp32"][0] != ref:
        sys.exit("the CUDA-graph baseline does not reproduce the eager cached loop's tokens")

if __name__ == "__main__":
    main()
