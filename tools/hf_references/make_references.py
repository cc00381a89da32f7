#!/usr/bin/python3
"""Makes vkformer's Hugging Face references (tests/hf/) with real `transformers`:

  tests/hf/marian/   a random-weight MarianMTModel saved by save_pretrained (tied
                     weights dropped, no position table), with a SentencePiece
                     source.spm / target.spm trained here by Debian's spm_train and
                     Marian's vocab.json, and OPUS-MT-style generation settings
  tests/hf/bart/     a random-weight BartForConditionalGeneration with a byte-level BPE
                     vocab.json + merges.txt learned here, and bart-large-cnn-style
                     generation settings
  tests/hf/marian_sharded/
                     the same Marian weights saved in shards (model.safetensors.index.json)
  tests/hf/references.json
                     per model: padded batches of sources and targets with their
                     logits, greedy and beam generate() outputs, and the real slow
                     tokenizers' ids (and decodings) of tests/hf/sentences.txt

No machine here reaches the Hugging Face hub, so the tokenizer files are made here.
Run on Debian 12 (torch 1.13 from python3-torch) with a transformers source tree:

  PYTHONPATH=/opt/hfref:tools/hf_references/shim /usr/bin/python3 tools/hf_references/make_references.py

where /opt/hfref holds transformers 4.44 (src/transformers of huggingface/transformers
at 80b90e7) and huggingface_hub 0.24.5 with a dist-info naming its version;
shim/ stands in for the two Rust-backed packages Debian lacks (see their docstrings).
With a real `pip install transformers sentencepiece` leave PYTHONPATH unset.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

import numpy as np
import regex
import torch
import transformers
from transformers import (BartConfig, BartForConditionalGeneration, BartTokenizer, GenerationConfig, MarianConfig,
                          MarianMTModel, MarianTokenizer)

# Without the `tokenizers` package, transformers 4.44 falls back to its own AddedToken,
# a dataclass with eq=True and so no hash, and the slow tokenizers' constructors then
# fail on `token in dict`. tokenizers' own AddedToken hashes its content: do the same.
if not transformers.utils.is_tokenizers_available():
    _added = transformers.tokenization_utils_base.AddedToken
    _added.__hash__ = lambda self: hash(self.content)
    _added.__setstate__ = lambda self, state: self.__dict__.update(state)  # as tokenizers' has

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "tests" / "hf"

# Training text for the tokenizers: a few languages, accents, digits, punctuation.
CORPUS = """The quick brown fox jumps over the lazy dog.
She sells sea shells by the sea shore, 3 times a day.
On 12 March 2024 the meeting starts at 10:30.
Die Katze schläft auf dem Sofa, während es regnet.
Über den Wolken muss die Freiheit wohl grenzenlos sein.
Le café est très chaud ; il fait déjà nuit à Paris.
¿Dónde está la estación de tren? Está cerca del río.
Ça coûte 45 euros, n'est-ce pas ?
The year 1999 was followed by 2000, then 2001.
We're sure they'll come; I'd say it's time.
Numbers: 0 1 2 3 4 5 6 7 8 9 10 100 1000 3.14
naïve façade résumé coöperate Zürich Málaga
Good morning! How are you today? Fine, thanks.
Translation models turn one language into another.
A small model with random weights still has a vocabulary.
""" * 3

# What the tokenizations are checked on: accents, CJK, emoji, digits, whitespace runs.
SENTENCES = [
    "Hello world.",
    "The quick brown fox jumps over the lazy dog.",
    "Die Katze schläft auf dem Sofa.",
    "Le café est très chaud à Paris.",
    "naïve résumé Zürich",
    "On 12 March 2024 at 10:30, 3.14159 and 1000000.",
    "日本語のテキストと中文",
    "emoji 🙂 and 🚀 rocket",
    "  leading and   multiple   spaces  ",
    "tabs\tand\nnewlines",
    "We're sure they'll come; I'd say it's time!",
    "¿Dónde está?",
    "x",
    "",
    "a </s> b<unk>c <pad> <mask> d <s>",           # special tokens inside the text
    "nel\x85sep\x1cideo\u3000space\u200bzero",   # Unicode whitespace and not-quite-whitespace
    "e\u0301 combining, \u0661\u0662\u0663 \u00bd \u216b",  # marks, other scripts' numbers
    "don't 'S 'll ''re",                             # contractions, and what only looks like one
    "  \n\n  x \t",                               # whitespace runs before a word and at the end
]

# Sources for generation and the logits checks (padded batches: different lengths).
SOURCES = [
    "The quick brown fox.",
    "Die Katze schläft auf dem Sofa, während es regnet.",
    "Ça coûte 45 euros.",
]


def spm_train(text_file, prefix, vocab_size):
    subprocess.run(["spm_train", f"--input={text_file}", f"--model_prefix={prefix}", f"--vocab_size={vocab_size}",
                    "--model_type=unigram", "--character_coverage=1.0", "--hard_vocab_limit=false",
                    "--num_threads=1", "--seed_sentencepiece_size=100000"],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def make_marian_tokenizer(directory, tmp):
    corpus = Path(tmp) / "corpus.txt"
    corpus.write_text(CORPUS)
    spm_train(corpus, Path(tmp) / "source", 180)
    spm_train(corpus, Path(tmp) / "target", 150)
    shutil.copy(Path(tmp) / "source.model", directory / "source.spm")
    shutil.copy(Path(tmp) / "target.model", directory / "target.spm")
    # Marian's vocab.json: </s> 0, <unk> 1, every piece of both models, <pad> last (as in OPUS-MT).
    pieces = []
    for name in ("source.vocab", "target.vocab"):
        for line in (Path(tmp) / name).read_text().splitlines():
            piece = line.split("\t")[0]
            if piece not in ("<unk>", "<s>", "</s>") and piece not in pieces:
                pieces.append(piece)
    vocab = {"</s>": 0, "<unk>": 1}
    for p in pieces:
        vocab[p] = len(vocab)
    vocab["<pad>"] = len(vocab)
    (directory / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False, indent=1))
    (directory / "tokenizer_config.json").write_text(json.dumps(
        {"source_lang": "xx", "target_lang": "yy", "model_max_length": 64, "separate_vocabs": False,
         "tokenizer_class": "MarianTokenizer"}, indent=1))
    (directory / "special_tokens_map.json").write_text(json.dumps(
        {"eos_token": "</s>", "unk_token": "<unk>", "pad_token": "<pad>"}, indent=1))
    return vocab


def bytes_to_unicode():
    """GPT-2's reversible byte -> printable character table (the published construction)."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs)))


def learn_merges(merges_count):
    """Byte-level BPE merges learned on CORPUS: the most frequent adjacent pair of symbols,
    merged everywhere, merges_count times (fewer when nothing is left to merge)."""
    pattern = regex.compile(r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""")
    b2u = bytes_to_unicode()
    words = Counter("".join(b2u[b] for b in w.encode()) for w in pattern.findall(CORPUS))
    splits = {w: list(w) for w in words}
    merges = []
    for _ in range(merges_count):
        pairs = Counter()
        for w, n in words.items():
            s = splits[w]
            for a, b in zip(s, s[1:]):
                pairs[a, b] += n
        if not pairs:
            break
        best = max(pairs.items(), key=lambda kv: (kv[1], kv[0]))[0]
        merges.append(best)
        for w in words:
            s, i, out = splits[w], 0, []
            while i < len(s):
                if i + 1 < len(s) and (s[i], s[i + 1]) == best:
                    out.append(s[i] + s[i + 1])
                    i += 2
                else:
                    out.append(s[i])
                    i += 1
            splits[w] = out
    return merges


def make_bart_tokenizer(directory, merges_count=300):
    """A byte-level BPE learned on CORPUS: every byte symbol, then the most frequent pairs."""
    b2u = bytes_to_unicode()
    merges = learn_merges(merges_count)
    vocab = {"<s>": 0, "<pad>": 1, "</s>": 2, "<unk>": 3}
    for ch in b2u.values():
        vocab[ch] = len(vocab)
    for a, b in merges:
        vocab.setdefault(a + b, len(vocab))
    vocab["<mask>"] = len(vocab)
    (directory / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False, indent=1))
    (directory / "merges.txt").write_text("#version: 0.2\n" + "".join(f"{a} {b}\n" for a, b in merges))
    (directory / "tokenizer_config.json").write_text(json.dumps(
        {"model_max_length": 64, "add_prefix_space": False, "tokenizer_class": "BartTokenizer"}, indent=1))
    return vocab


def widen(model, std, seed):
    """Random weights far from the 0.02 default: logits with clear margins, so argmax and
    beam choices are decided by the model, not by rounding."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "layer_norm" in name or "layernorm" in name:
                p.copy_(1 + 0.2 * torch.randn(p.shape, generator=g) if name.endswith("weight")
                        else 0.2 * torch.randn(p.shape, generator=g))
            else:
                p.copy_(std * torch.randn(p.shape, generator=g))
        if hasattr(model, "final_logits_bias"):
            model.final_logits_bias.copy_(0.5 * torch.randn(model.final_logits_bias.shape, generator=g))


def padded(rows, pad):
    n = max(len(r) for r in rows)
    ids = torch.full((len(rows), n), pad, dtype=torch.long)
    mask = torch.zeros((len(rows), n), dtype=torch.long)
    for i, r in enumerate(rows):
        ids[i, :len(r)] = torch.tensor(r)
        mask[i, :len(r)] = 1
    return ids, mask


def min_margin(model, src_ids, src_mask, outputs):
    """The smallest gap between the chosen logit and the next lower one along greedy
    outputs, forced steps left out (a near-tie would make a token-for-token check depend
    on rounding). Tokens above the chosen one were banned by a logits processor."""
    cfg = model.generation_config
    worst = float("inf")
    for i, out in enumerate(outputs):
        with torch.no_grad():
            logits = model(input_ids=src_ids[i:i + 1], attention_mask=src_mask[i:i + 1],
                           decoder_input_ids=torch.tensor([out[:-1]])).logits[0]
        for j in range(len(out) - 1):
            forced = (j == 0 and cfg.forced_bos_token_id is not None) or \
                     (j == len(out) - 2 and out[-1] == cfg.forced_eos_token_id and j + 2 == cfg.max_length)
            if forced:
                continue
            chosen = logits[j, out[j + 1]]
            lower = logits[j][logits[j] < chosen]
            if len(lower):
                worst = min(worst, float(chosen - lower.max()))
    return worst


def references(model, tok, gen_config_overrides):
    """Logits of padded batches, greedy and beam outputs, tokenizations."""
    pad = model.config.pad_token_id
    src_rows = [tok(s)["input_ids"] for s in SOURCES]
    src_ids, src_mask = padded(src_rows, pad)
    start = model.config.decoder_start_token_id
    # Teacher-forced targets: the start token, then a few ids of each source's tokenization.
    tgt_rows = [[start] + r[: 3 + 2 * i] for i, r in enumerate(src_rows)]
    tgt_ids, _ = padded(tgt_rows, pad)
    with torch.no_grad():
        logits = model(input_ids=src_ids, attention_mask=src_mask, decoder_input_ids=tgt_ids).logits
    ref = {
        "transformers_version": transformers.__version__,
        "torch_version": torch.__version__,
        "sources": src_rows,
        "targets": tgt_rows,
        "logits": [logits[i, :len(t)].tolist() for i, t in enumerate(tgt_rows)],
    }
    gen = {}
    for name, kwargs in gen_config_overrides.items():
        with torch.no_grad():
            out = model.generate(input_ids=src_ids, attention_mask=src_mask, **kwargs)
        rows = []
        for r in out.tolist():
            # generate() pads finished rows of a batch with pad after EOS: cut at the first EOS after the start
            r = r[1:]
            if model.config.eos_token_id in r:
                r = r[: r.index(model.config.eos_token_id) + 1]
            rows.append(r)
        gen[name] = {"options": kwargs, "ids": rows, "text": tok.batch_decode(out, skip_special_tokens=True)}
    ref["generate"] = gen
    ref["greedy_min_margin"] = min_margin(model, src_ids, src_mask, [[start] + r for r in gen["greedy"]["ids"]])
    ref["tokenizations"] = [{"text": s, "ids": tok(s)["input_ids"],
                             "decoded": tok.decode(tok(s)["input_ids"], skip_special_tokens=True)}
                            for s in SENTENCES]
    return ref


def make_marian(tmp):
    d = OUT / "marian"
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir(parents=True)
    vocab = make_marian_tokenizer(d, tmp)
    V = len(vocab)
    config = MarianConfig(vocab_size=V, decoder_vocab_size=V, d_model=32, encoder_layers=2, decoder_layers=2,
                          encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=64,
                          decoder_ffn_dim=64, activation_function="swish", max_position_embeddings=64,
                          scale_embedding=True, pad_token_id=V - 1, eos_token_id=0, decoder_start_token_id=V - 1,
                          forced_eos_token_id=0, share_encoder_decoder_embeddings=True)
    torch.manual_seed(1)
    model = MarianMTModel(config).eval()
    widen(model, 0.35, 11)
    # What OPUS-MT checkpoints carry (e.g. Helsinki-NLP/opus-mt-en-de), scaled down.
    model.generation_config = GenerationConfig(bad_words_ids=[[V - 1]], bos_token_id=0, decoder_start_token_id=V - 1,
                                               eos_token_id=0, forced_eos_token_id=0, max_length=24, num_beams=4,
                                               pad_token_id=V - 1)
    model.save_pretrained(d)
    tok = MarianTokenizer.from_pretrained(d)
    model = MarianMTModel.from_pretrained(d).eval()
    # The same weights as a sharded checkpoint, as save_pretrained writes one past
    # max_shard_size (5 GB by default): model-0000k-of-0000n.safetensors and
    # model.safetensors.index.json. The tests check its logits against the one file's.
    sharded = OUT / "marian_sharded"
    shutil.rmtree(sharded, ignore_errors=True)
    model.save_pretrained(sharded, max_shard_size="100KB")
    assert (sharded / "model.safetensors.index.json").exists() and not (sharded / "model.safetensors").exists()
    return references(model, tok, {"greedy": {"num_beams": 1}, "beam": {}})


def make_bart(tmp):
    d = OUT / "bart"
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir(parents=True)
    vocab = make_bart_tokenizer(d)
    V = len(vocab)
    config = BartConfig(vocab_size=V, d_model=32, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
                        decoder_attention_heads=4, encoder_ffn_dim=64, decoder_ffn_dim=64,
                        activation_function="gelu", max_position_embeddings=64, scale_embedding=False,
                        pad_token_id=1, bos_token_id=0, eos_token_id=2, decoder_start_token_id=2,
                        forced_bos_token_id=0, forced_eos_token_id=2)
    torch.manual_seed(2)
    model = BartForConditionalGeneration(config).eval()
    widen(model, 0.35, 22)
    # bart-large-cnn's settings, scaled down.
    model.generation_config = GenerationConfig(bos_token_id=0, decoder_start_token_id=2, eos_token_id=2,
                                               forced_bos_token_id=0, forced_eos_token_id=2, pad_token_id=1,
                                               early_stopping=True, length_penalty=2.0, max_length=20, min_length=6,
                                               no_repeat_ngram_size=3, num_beams=4)
    model.save_pretrained(d)
    tok = BartTokenizer.from_pretrained(d)
    model = BartForConditionalGeneration.from_pretrained(d).eval()
    return references(model, tok, {"greedy": {"num_beams": 1}, "beam": {}})


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "sentences.txt").write_text("".join(s.replace("\n", "\\n").replace("\t", "\\t") + "\n" for s in SENTENCES))
    with tempfile.TemporaryDirectory() as tmp:
        refs = {"marian": make_marian(tmp), "bart": make_bart(tmp)}
    (OUT / "references.json").write_text(json.dumps(refs, ensure_ascii=False) + "\n")
    for name, r in refs.items():
        print(f"{name}: greedy min margin {r['greedy_min_margin']:.3f}; greedy {r['generate']['greedy']['ids']}; "
              f"beam {r['generate']['beam']['ids']}")
    total = sum(f.stat().st_size for f in OUT.rglob("*") if f.is_file())
    print(f"tests/hf: {total / 1e6:.2f} MB")


if __name__ == "__main__":
    main()
