#!/usr/bin/python3
"""Makes vkformer's GPT-2 references (tests/hf/gpt2/) with real `transformers`:

  tests/hf/gpt2/lm/        a random GPT2LMHeadModel saved by save_pretrained (weights
                           under "transformer.", lm_head tied and dropped), with a
                           GPT2Tokenizer's files (a byte-level BPE learned here, as
                           make_references.py learns BART's)
  tests/hf/gpt2/base/      the same weights as a GPT2Model (no prefix, no lm_head)
  tests/hf/gpt2/sharded/   the same weights in shards (model.safetensors.index.json)
  tests/hf/gpt2/bf16/      the same weights saved in bfloat16
  tests/hf/gpt2/eos/       another random model whose eos_token_id is in its vocabulary
  tests/hf/gpt2/references.json
                           per model: prompts (token ids, used as given), their logits
                           at every position, and greedy generate() continuations, with
                           and without a repetition penalty; the
                           slow and fast GPT-2 tokenizers' ids of tests/hf/sentences.txt
                           and the decoded text of the lm model's continuations; and
                           tests/hf/bart's generate() with a repetition penalty

Random weights are scaled up from GPT-2's initialisation (std 0.02 gives logits within
1e-3 of each other, where greedy decoding is a coin toss) and the LayerNorms are
randomised, so the checks see every weight. Run with transformers 4.36.2 (and its
`tokenizers`, `safetensors`, `huggingface_hub`) on Debian's torch:

  PYTHONPATH=/path/to/site-packages /usr/bin/python3 tools/hf_references/make_gpt2_references.py
"""
import json
import shutil
import sys
import tempfile
from pathlib import Path

import torch
import transformers
from transformers import GPT2Config, GPT2LMHeadModel, GPT2Tokenizer, GPT2TokenizerFast

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_references import bytes_to_unicode, learn_merges  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "tests" / "hf" / "gpt2"
VOCAB = 357  # the tokenizer's: 256 byte symbols, 100 merges, <|endoftext|>
PROMPTS = [[5, 17, 9], [42], [7, 7, 7, 7, 7, 7], [int(x) for x in torch.randint(0, VOCAB, (20,), generator=torch.Generator().manual_seed(3))]]
NEW_TOKENS = 12
PENALTY = 1.5  # generate(repetition_penalty=...): the prompt's tokens and the generated ones


def random_model(seed, **config):
    torch.manual_seed(seed)
    cfg = GPT2Config(n_embd=48, n_layer=2, n_head=4, n_positions=64, vocab_size=VOCAB, resid_pdrop=0.0, embd_pdrop=0.0,
                     attn_pdrop=0.0, **config)
    model = GPT2LMHeadModel(cfg).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("ln_1.weight") or name.endswith("ln_2.weight") or name.endswith("ln_f.weight"):
                p.copy_(1 + 0.3 * torch.randn_like(p))
            elif "ln_" in name:  # biases
                p.copy_(0.3 * torch.randn_like(p))
            else:
                p.mul_(8.0)  # std 0.16: logits apart by ~1
    return model


def make_gpt2_tokenizer(directory, merges_count=100):
    """GPT-2's layout: the 256 byte symbols, the merges learned on CORPUS, <|endoftext|>;
    saved by GPT2Tokenizer.save_pretrained as a hub GPT-2 directory holds it."""
    b2u = bytes_to_unicode()
    merges = learn_merges(merges_count)
    vocab = {}
    for ch in b2u.values():
        vocab[ch] = len(vocab)
    for a, b in merges:
        vocab.setdefault(a + b, len(vocab))
    vocab["<|endoftext|>"] = len(vocab)
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False))
        (Path(tmp) / "merges.txt").write_text("#version: 0.2\n" + "".join(f"{a} {b}\n" for a, b in merges))
        tok = GPT2Tokenizer(str(Path(tmp) / "vocab.json"), str(Path(tmp) / "merges.txt"))
        tok.save_pretrained(directory)
    return GPT2Tokenizer.from_pretrained(directory), GPT2TokenizerFast.from_pretrained(directory)


def references(model):
    out = []
    with torch.no_grad():
        for ids in PROMPTS:
            x = torch.tensor([ids])
            logits = model(x).logits[0].float()
            gen = model.generate(x, max_new_tokens=NEW_TOKENS, do_sample=False,
                                 pad_token_id=model.config.eos_token_id)[0, len(ids):]
            penalised = model.generate(x, max_new_tokens=NEW_TOKENS, do_sample=False, repetition_penalty=PENALTY,
                                       pad_token_id=model.config.eos_token_id)[0, len(ids):]
            out.append({"ids": ids, "logits": logits.flatten().tolist(), "greedy": gen.tolist(),
                        "greedy_repetition_penalty": penalised.tolist()})
    return out


def main():
    if OUT.exists():
        shutil.rmtree(OUT)
    OUT.mkdir(parents=True)
    refs = {"transformers_version": transformers.__version__, "new_tokens": NEW_TOKENS, "repetition_penalty": PENALTY,
            "models": {}}

    slow, fast = make_gpt2_tokenizer(OUT / "lm")
    assert len(slow) == VOCAB, len(slow)
    lm = random_model(1)
    lm.save_pretrained(OUT / "lm")
    refs["models"]["lm"] = references(lm)
    sentences = (ROOT / "tests" / "hf" / "sentences.txt").read_text(encoding="utf-8").split("\n")[:-1]
    ids = [slow(t)["input_ids"] for t in sentences]
    assert ids == [fast(t)["input_ids"] for t in sentences], "the slow and fast GPT-2 tokenizers disagree"
    refs["tokenizer"] = {"sentences": sentences, "ids": ids,
                         "decoded": [slow.decode(i, skip_special_tokens=True) for i in ids],
                         "greedy_text": [slow.decode(r["greedy"], skip_special_tokens=True)
                                         for r in refs["models"]["lm"]]}
    refs["models"]["sharded"] = refs["models"]["lm"]
    lm.save_pretrained(OUT / "sharded", max_shard_size="40KB")
    lm.transformer.save_pretrained(OUT / "base")
    refs["models"]["base"] = refs["models"]["lm"]

    bf16 = random_model(1).to(torch.bfloat16)
    bf16.save_pretrained(OUT / "bf16")
    refs["models"]["bf16"] = references(bf16.float())  # the rounded weights, computed in fp32

    eos = random_model(2, eos_token_id=166, bos_token_id=166)  # a token its greedy continuations reach
    eos.save_pretrained(OUT / "eos")
    refs["models"]["eos"] = references(eos)

    # The host-side processors of the encoder-decoders take the same penalty: BART's
    # references (tests/hf/bart, made by make_references.py) under its own generation
    # settings, greedy and beam search, with repetition_penalty added.
    from transformers import BartForConditionalGeneration
    bart = BartForConditionalGeneration.from_pretrained(ROOT / "tests" / "hf" / "bart").eval()
    sources = json.load(open(ROOT / "tests" / "hf" / "references.json"))["bart"]["sources"][:2]
    refs["bart_repetition_penalty"] = {"sources": sources, "max_new_tokens": NEW_TOKENS}
    with torch.no_grad():
        for beams in (1, 4):
            refs["bart_repetition_penalty"][f"beams_{beams}"] = [
                bart.generate(torch.tensor([src]), num_beams=beams, max_new_tokens=NEW_TOKENS,
                              repetition_penalty=PENALTY)[0, 1:].tolist() for src in sources]
    with open(OUT / "references.json", "w") as f:
        json.dump(refs, f)
    print("wrote", OUT)


if __name__ == "__main__":
    main()
