"""The torch-seq2seq architecture of vkformer's model contract, and reference decoders.

Run with Debian's torch: /usr/bin/python3. The module's state_dict() names are the
tensor names of model.safetensors; see tools/export.py for writing a model directory.
"""
import math

import numpy as np
import torch
from torch import nn

# Every config.json field of a torch-seq2seq model: its type and what vkformer accepts
# (lib/model/formats/vkformer_config.cpp checks each, and an error names the field and its range).
CONFIG = {
    "architecture": ("str", '"torch-seq2seq"'),
    "d_model": ("int", "1 to 2^31; divisible by nhead, d_model / nhead at most the attention kernel's head size"),
    "nhead": ("int", "1 to 2^31"),
    "num_encoder_layers": ("int", "0 or more, as many as the checkpoint holds"),
    "num_decoder_layers": ("int", "0 or more, as many as the checkpoint holds"),
    "dim_feedforward": ("int", "1 or more"),
    "activation": ("str", '"relu" or "gelu"'),
    "norm_first": ("bool", "false: post-norm (nn.Transformer's default), true: pre-norm"),
    "layer_norm_eps": ("float", "0 to 0.1 (1e-5 is nn.LayerNorm's default)"),
    "src_vocab_size": ("int", "1 or more"),
    "tgt_vocab_size": ("int", "1 or more"),
    "max_position": ("int", "1 to 65536, and max_position x d_model at most 2^26: the longest source or output"),
    "scale_embedding": ("bool", "true: embeddings times sqrt(d_model) before the positions are added"),
    "pad_id": ("int", "a source id: padding, masked out of attention"),
    "bos_id": ("int", "a target id: the first token fed to the decoder"),
    "eos_id": ("int", "a target id: ends a generated sequence"),
}
CONFIG_KEYS = list(CONFIG)


def sinusoidal_positions(positions, d_model):
    """PE[p, 2i] = sin(p / 10000^(2i/d)), PE[p, 2i+1] = cos(...), in float64, rounded once."""
    p = np.arange(positions, dtype=np.float64)[:, None]
    c = np.arange(d_model)
    angle = p / np.power(10000.0, (c - c % 2) / d_model)
    pe = np.where(c % 2 == 0, np.sin(angle), np.cos(angle))
    return torch.tensor(pe.astype(np.float32))


class Seq2Seq(nn.Module):
    """config: a dict with every CONFIG key. dropout applies in training only (model.train());
    exported weights, and vkformer, run the model in eval mode, where dropout does nothing."""

    def __init__(self, config, dropout=0.0):
        super().__init__()
        missing = [k for k in CONFIG if k != "architecture" and k not in config]
        if missing:
            raise ValueError(f"config lacks {missing}: see CONFIG in tools/seq2seq.py")
        self.config = {k: v for k, v in config.items() if k in CONFIG}
        c = self.config
        self.src_embed = nn.Embedding(c["src_vocab_size"], c["d_model"])
        self.tgt_embed = nn.Embedding(c["tgt_vocab_size"], c["d_model"])
        self.transformer = nn.Transformer(
            c["d_model"], c["nhead"], c["num_encoder_layers"], c["num_decoder_layers"],
            c["dim_feedforward"], dropout, c["activation"], batch_first=True,
            norm_first=c["norm_first"], layer_norm_eps=c["layer_norm_eps"])
        self.generator = nn.Linear(c["d_model"], c["tgt_vocab_size"])
        self.register_buffer("pe", sinusoidal_positions(c["max_position"], c["d_model"]), persistent=False)

    def embed(self, table, ids):
        scale = math.sqrt(self.config["d_model"]) if self.config["scale_embedding"] else 1.0
        return table(ids) * scale + self.pe[: ids.shape[1]]

    def encode(self, src):
        pad = src == self.config["pad_id"]
        return self.transformer.encoder(self.embed(self.src_embed, src), src_key_padding_mask=pad), pad

    def decode(self, memory, pad, tgt):
        causal = self.transformer.generate_square_subsequent_mask(tgt.shape[1])
        out = self.transformer.decoder(self.embed(self.tgt_embed, tgt), memory, tgt_mask=causal,
                                       memory_key_padding_mask=pad)
        return self.generator(out)

    def forward(self, src, tgt):
        memory, pad = self.encode(src)
        return self.decode(memory, pad, tgt)


def pad_batch(sources, pad_id):
    width = max(len(s) for s in sources)
    return torch.tensor([list(s) + [pad_id] * (width - len(s)) for s in sources])


@torch.no_grad()
def greedy(model, sources, max_new_tokens):
    """Per source: the generated ids after BOS, EOS included when produced."""
    c = model.config
    src = pad_batch(sources, c["pad_id"])
    memory, pad = model.encode(src)
    tgt = torch.full((len(sources), 1), c["bos_id"])
    done = [False] * len(sources)
    out = [[] for _ in sources]
    for _ in range(max_new_tokens):
        logits = model.decode(memory, pad, tgt)[:, -1]
        nxt = logits.argmax(-1)
        for b in range(len(sources)):
            if not done[b]:
                out[b].append(int(nxt[b]))
                done[b] = int(nxt[b]) == c["eos_id"]
        if all(done):
            break
        tgt = torch.cat([tgt, nxt[:, None]], 1)
    return out


@torch.no_grad()
def beam_search(model, source, width, max_new_tokens, length_penalty=1.0):
    """vkformer's beam search, step for step (lib/model/decoding/decoding.cpp):
    every step ranks all (beam, token) continuations by total log-probability (ties:
    lower beam, then lower token), keeps the best `width`; a continuation ending in EOS
    is finished with score / len^length_penalty; search stops when `width` hypotheses
    are finished or no beam is live; at max_new_tokens live beams count as finished."""
    c = model.config
    src = pad_batch([source], c["pad_id"])
    memory, pad = model.encode(src)
    beams = [([], 0.0)]
    finished = []
    for step in range(max_new_tokens):
        tgt = torch.tensor([[c["bos_id"]] + ids for ids, _ in beams])
        mem = memory.expand(len(beams), -1, -1)
        logp = torch.log_softmax(model.decode(mem, pad.expand(len(beams), -1), tgt)[:, -1].double(), -1)
        total = torch.tensor([s for _, s in beams], dtype=torch.float64)[:, None] + logp
        flat = total.flatten()
        order = sorted(range(flat.numel()), key=lambda i: (-float(flat[i]), i))[:width]
        live = []
        for i in order:
            b, tok = divmod(i, logp.shape[1])
            ids, score = beams[b][0] + [tok], float(flat[i])
            if tok == c["eos_id"]:
                finished.append((ids, score / len(ids) ** length_penalty))
            else:
                live.append((ids, score))
        beams = live
        if len(finished) >= width or not beams:
            break
    finished += [(ids, s / len(ids) ** length_penalty) for ids, s in beams]
    return max(finished, key=lambda h: h[1])[0]
