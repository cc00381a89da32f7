"""Makes the references for the Llama 2 / TinyLlama tokenizer (tokenizer.model, a
SentencePiece BPE model with byte fallback) with real `transformers`:

  tests/hf/llama/tokenizer_sentencepiece/         tokenizer.model as LlamaTokenizer saves
                           it, its tokenizer_config.json with legacy false (Llama 2's and
                           TinyLlama's hub files say so), and a config.json naming a Llama
                           of its vocabulary; no tokenizer.json
  tests/hf/llama/tokenizer_sentencepiece_legacy/  the same model with legacy true (the
                           default of configs that do not say), BOS and EOS both added
  tests/hf/llama/tokenizer_sentencepiece_json/    the fast tokenizer converted from it, saved
                           as tokenizer.json alone (the `tokenizers` library's SentencePiece-
                           style BPE: Prepend and Replace normalizers, byte fallback, the
                           ByteFallback decoder), as hub repositories ship it beside (or,
                           converted, without) tokenizer.model
  tests/hf/llama/sentencepiece_references.json
                           per directory: the ids transformers' slow LlamaTokenizer gives
                           tests/hf/sentences.txt and a few edge cases, and the text its
                           decode(skip_special_tokens=True) gives back; the fast tokenizer
                           converted from it, for comparison

The SentencePiece model is trained here (sentencepiece's own trainer, as Meta's was: BPE,
byte fallback, digits split, whitespace kept, identity normalization) on the README as it
is when the script runs, so no hub is needed (a later README trains a slightly different
model: rerunning rewrites the models and their references together); 700 pieces leave
plenty of characters of sentences.txt to byte fallback.
Run with transformers 4.36.2, sentencepiece and protobuf on Debian's torch:

  PYTHONPATH=/path/to/site-packages /usr/bin/python3 tools/hf_references/make_sentencepiece_references.py
"""
import json
import shutil
import tempfile
from pathlib import Path

import sentencepiece as spm
import transformers
from transformers import LlamaTokenizer, LlamaTokenizerFast, PreTrainedTokenizerFast

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "tests" / "hf" / "llama"
EXTRA = ["", " ", "▁already marked▁", "<s>hello", " <s> hello </s>", "a<unk>b", "x\u00a0y", "12345 67",
         "Ünïcödé ⚙️ \U0001F600 \u200d", "   ", "\n\nline\n"]


def train(corpus, prefix):
    spm.SentencePieceTrainer.train(
        input=str(corpus), model_prefix=str(prefix), model_type="bpe", vocab_size=700, byte_fallback=True,
        split_digits=True, allow_whitespace_only_pieces=True, remove_extra_whitespaces=False,
        normalization_rule_name="identity", character_coverage=0.9995, unk_id=0, bos_id=1, eos_id=2, pad_id=-1,
        add_dummy_prefix=True, num_threads=1, minloglevel=2)
    return Path(str(prefix) + ".model")


def main():
    sentences = (ROOT / "tests" / "hf" / "sentences.txt").read_text(encoding="utf-8").split("\n")[:-1] + EXTRA
    refs = {"transformers_version": transformers.__version__, "sentencepiece_version": spm.__version__, "tokenizers": {}}
    with tempfile.TemporaryDirectory() as tmp:
        corpus = Path(tmp) / "corpus.txt"
        corpus.write_text((ROOT / "README.md").read_text(encoding="utf-8"), encoding="utf-8")
        model = train(corpus, Path(tmp) / "llama2")
        for name, legacy, add_eos in (("tokenizer_sentencepiece", False, False),
                                      ("tokenizer_sentencepiece_legacy", True, True)):
            out = OUT / name
            if out.exists():
                shutil.rmtree(out)
            slow = LlamaTokenizer(vocab_file=str(model), legacy=legacy, add_eos_token=add_eos)
            slow.save_pretrained(out)
            if legacy:  # as older configs: no "legacy" key, so transformers takes legacy behaviour
                cfg = json.loads((out / "tokenizer_config.json").read_text())
                cfg.pop("legacy", None)
                (out / "tokenizer_config.json").write_text(json.dumps(cfg, indent=2))
            (out / "config.json").write_text(json.dumps(
                {"model_type": "llama", "vocab_size": slow.vocab_size, "hidden_size": 8, "intermediate_size": 8,
                 "num_hidden_layers": 0, "num_attention_heads": 1, "max_position_embeddings": 8}))
            slow = LlamaTokenizer.from_pretrained(out)
            assert slow.legacy == legacy
            fast = LlamaTokenizerFast.from_pretrained(out, from_slow=True, legacy=legacy)
            ids = [slow(s)["input_ids"] for s in sentences]
            fast_ids = [fast(s)["input_ids"] for s in sentences]
            refs["tokenizers"][name] = {
                "sentences": sentences, "ids": ids,
                "decoded": [slow.decode(i, skip_special_tokens=True) for i in ids],
                "fast_ids": fast_ids,
                "fast_differs_on": [s for s, a, b in zip(sentences, ids, fast_ids) if a != b]}
            # The bytes that fell back: pieces <0x..> among the ids (the test needs some).
            refs["tokenizers"][name]["byte_fallback_ids"] = sorted(
                {i for row in ids for i in row if slow.convert_ids_to_tokens(i).startswith("<0x")})
        # tokenizer.json alone: what AutoTokenizer then runs is the fast tokenizer.
        out = OUT / "tokenizer_sentencepiece_json"
        if out.exists():
            shutil.rmtree(out)
        shutil.copytree(OUT / "tokenizer_sentencepiece_legacy", out)
        fast = LlamaTokenizerFast.from_pretrained(out, from_slow=True, legacy=True, add_eos_token=False)
        shutil.rmtree(out)
        fast.save_pretrained(out)
        (out / "tokenizer.model").unlink(missing_ok=True)  # (a fast tokenizer saves it only when it has it)
        shutil.copy(OUT / "tokenizer_sentencepiece" / "config.json", out / "config.json")
        fast = PreTrainedTokenizerFast.from_pretrained(out)
        ids = [fast(s)["input_ids"] for s in sentences]
        refs["tokenizers"]["tokenizer_sentencepiece_json"] = {
            "sentences": sentences, "ids": ids, "decoded": [fast.decode(i, skip_special_tokens=True) for i in ids],
            "byte_fallback_ids": sorted({i for row in ids for i in row if fast.convert_ids_to_tokens(i).startswith("<0x")})}
    with open(OUT / "sentencepiece_references.json", "w", encoding="utf-8") as f:
        json.dump(refs, f, ensure_ascii=False, indent=1)
    print("wrote", OUT / "sentencepiece_references.json")


if __name__ == "__main__":
    main()
