"""Makes vkformer's sentence-transformers references with real `sentence-transformers`
(2.7.0) and `transformers` (4.36.2):

  tests/hf/bert/sentence/    a sentence-transformers directory shaped as
        all-MiniLM-L6-v2's (modules.json: Transformer, Pooling (mean), Normalize, whose
        2_Normalize folder is not shipped, as that model's is not), over a random
        BertModel (hidden 32, 2 layers, 4 heads, FFN 64, 64 positions) with a WordPiece
        vocabulary of 4,000 tokens cut from BERT's uncased one (tests/hf/bert/tokenizer/),
        max_seq_length 24 so that long texts are cut
  tests/hf/bert/cross_encoder/   a random BertForSequenceClassification with one label (a
        cross-encoder's shape) over the same vocabulary, and its references.json: the scores
        sentence-transformers' CrossEncoder(max_length=64).predict gives PAIRS
  tests/hf/bert/sentence/references.json
        for each pooling variant (the directory's own; cls; max; mean_sqrt_len_tokens;
        all four concatenated, not normalised) the embeddings of TEXTS, and the texts
        sentence-transformers truncated

Run in a venv with --system-site-packages (Debian's torch), transformers 4.36.2 and
sentence-transformers 2.7.0:

  /path/to/venv/bin/python tools/hf_references/make_sentence_references.py
"""
import json
import shutil
import tempfile
from pathlib import Path

import sentence_transformers
import torch
import transformers
from sentence_transformers import SentenceTransformer, models
from random_weights import randomised
from transformers import BertConfig, BertModel, BertTokenizerFast

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "tests" / "hf" / "bert" / "sentence"
SOURCE_VOCAB = ROOT / "tests" / "hf" / "bert" / "tokenizer" / "vocab.txt"

TEXTS = [
    "A man is eating food.",
    "A man is eating a piece of bread.",
    "The girl is carrying a baby.",
    "A man is riding a horse.",
    "A woman is playing violin.",
    "Two men pushed carts through the woods.",
    "A man is riding a white horse on an enclosed ground.",
    "A monkey is playing drums.",
    "Café naïve résumé, and İstanbul!",
    "北京大学 😀 emoji",
    "",
    "   padded with spaces   ",
    "This sentence is long enough that it will certainly be cut at twenty four tokens by the "
    "max_seq_length of this model, which is the point of it.",
    "word " * 100,
    "x",
]

VARIANTS = {  # name: (pooling modes, normalize)
    "directory": (["mean"], True),
    "cls": (["cls"], True),
    "max": (["max"], False),
    "mean_sqrt_len_tokens": (["mean_sqrt_len_tokens"], True),
    "all": (["cls", "max", "mean", "mean_sqrt_len_tokens"], False),
}


PAIRS = [
    ("How old are you?", "I am six years old."),
    ("A man is eating food.", "A man is eating a piece of bread."),
    ("The girl is carrying a baby.", "A monkey is playing drums."),
    ("Café naïve", "北京 😀"),
    ("short", "word " * 80),
    ("word " * 80, "short"),
    ("", "an empty first text"),
]


def cross_encoder(tokenizer, vocab_size):
    from sentence_transformers import CrossEncoder
    from transformers import BertForSequenceClassification
    out = OUT.parent / "cross_encoder"
    shutil.rmtree(out, ignore_errors=True)
    torch.manual_seed(53)
    config = BertConfig(vocab_size=vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                        intermediate_size=64, max_position_embeddings=64, pad_token_id=0, num_labels=1)
    model = BertForSequenceClassification(config)
    randomised(model, None).save_pretrained(str(out), safe_serialization=True)
    tokenizer.save_pretrained(str(out))
    (out / "special_tokens_map.json").unlink()
    ce = CrossEncoder(str(out), max_length=64, device="cpu")
    scores = ce.predict([list(p) for p in PAIRS], convert_to_tensor=True).tolist()
    (out / "references.json").write_text(json.dumps({"pairs": PAIRS, "scores": scores, "max_length": 64}) + "\n")
    print("wrote", out, scores)


def pooling_config(modes, width):
    return {"word_embedding_dimension": width, "pooling_mode_cls_token": "cls" in modes,
            "pooling_mode_mean_tokens": "mean" in modes, "pooling_mode_max_tokens": "max" in modes,
            "pooling_mode_mean_sqrt_len_tokens": "mean_sqrt_len_tokens" in modes}


def main():
    torch.manual_seed(52)
    shutil.rmtree(OUT, ignore_errors=True)
    OUT.mkdir(parents=True)
    # The vocabulary: BERT's first 3,000 tokens (specials, characters, frequent words) and
    # its "##" pieces of one character, so every word has a split.
    tokens = SOURCE_VOCAB.read_text(encoding="utf-8").split("\n")[:-1]
    vocab = tokens[:3000] + [t for t in tokens[3000:] if t.startswith("##") and len(t) == 3]
    vocab = vocab[:4000]
    with tempfile.TemporaryDirectory() as d:
        (Path(d) / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
        tokenizer = BertTokenizerFast(str(Path(d) / "vocab.txt"), do_lower_case=True)
    tokenizer.save_pretrained(str(OUT))
    (OUT / "special_tokens_map.json").unlink()
    config = BertConfig(vocab_size=len(vocab), hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                        intermediate_size=64, max_position_embeddings=64, pad_token_id=0)
    bert = BertModel(config, add_pooling_layer=False)
    randomised(bert, None).save_pretrained(str(OUT), safe_serialization=True)
    (OUT / "modules.json").write_text(json.dumps([
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
        {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}], indent=2) + "\n")
    (OUT / "1_Pooling").mkdir()
    (OUT / "1_Pooling" / "config.json").write_text(json.dumps(pooling_config(["mean"], 32), indent=2) + "\n")
    (OUT / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": 24, "do_lower_case": False}) + "\n")

    refs = {"transformers": transformers.__version__, "sentence_transformers": sentence_transformers.__version__,
            "texts": TEXTS, "max_seq_length": 24, "variants": {}}
    for name, (modes, normalize) in VARIANTS.items():
        st_modules = [models.Transformer(str(OUT), max_seq_length=24),
                      models.Pooling(32, **{k: v for k, v in pooling_config(modes, 32).items()
                                            if k != "word_embedding_dimension"})]
        if normalize:
            st_modules.append(models.Normalize())
        model = SentenceTransformer(modules=st_modules, device="cpu")
        if name == "directory":  # the directory itself, as sentence-transformers loads it
            model = SentenceTransformer(str(OUT), device="cpu")
            assert model.max_seq_length == 24 and len(model) == 3
        emb = model.encode(TEXTS, batch_size=4, convert_to_tensor=True).tolist()
        lengths = [len(model.tokenize([t])["input_ids"][0]) for t in TEXTS]
        refs["variants"][name] = {"pooling": modes, "normalize": normalize,
                                  "embeddings": [[float(v) for v in row] for row in emb]}
        refs["token_counts"] = lengths
    refs["truncated"] = [i for i, t in enumerate(TEXTS)
                         if len(tokenizer(t.strip())["input_ids"]) > 24]
    (OUT / "references.json").write_text(json.dumps(refs, ensure_ascii=False) + "\n")
    print("wrote", OUT, "truncated:", refs["truncated"])
    cross_encoder(tokenizer, len(vocab))


if __name__ == "__main__":
    main()
