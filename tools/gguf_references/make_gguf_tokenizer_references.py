"""Makes tests/gguf/tokenizers/: GGUF files that carry byte-level BPE tokenizers
(tokenizer.ggml.model "gpt2") made from the small tokenizers in tests/hf/llama, and what
transformers' fast tokenizer gives on the shared sentence list, for
tests/model/gguf_models_test.cpp.

  llama-bpe.gguf  from tests/hf/llama/tokenizer_llama3 (Llama 3's split pattern)
  qwen2.gguf      from tests/hf/llama/tokenizer_qwen2 (Qwen2's pattern, NFC)
  gpt-2.gguf      from tests/hf/llama/tokenizer_bytelevel (GPT-2's ByteLevel regex)
  smollm.gguf     the same vocabulary with SmolLM's pre-tokenizer (digits apart first)

llama.cpp's converter recognises a BPE tokenizer by hashing what it makes of a test text
and refuses tokenizers it has not seen (these small trained ones), so the files are
written with the gguf package's GGUFWriter as the converter's _set_vocab_gpt2 writes
them (our reading of it, no llama.cpp code): the tokens by id, token_type NORMAL, CONTROL
for special added tokens and USER_DEFINED for the other added ones, the merges as
tokenizer.json lists them, tokenizer.ggml.pre named explicitly, the BOS and EOS ids and
add_bos_token (whether transformers puts BOS before a text). A tiny `llama` model's
hyperparameters come with them (no tensors): the tokenizer is what is checked. Decoded text
is transformers' with clean_up_tokenization_spaces=False, as llama.cpp decodes.

  /path/to/venv/bin/python tools/gguf_references/make_gguf_tokenizer_references.py   (transformers 4.37.2: Qwen2Tokenizer)
"""
import json
from pathlib import Path

from gguf import GGUFWriter
from transformers import AutoTokenizer

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "tests" / "gguf" / "tokenizers"
SOURCES = {"llama-bpe": "tokenizer_llama3", "qwen2": "tokenizer_qwen2", "gpt-2": "tokenizer_bytelevel",
           "smollm": "tokenizer_bytelevel"}
# SmolLM's pre-tokenizer (each digit apart, then GPT-2's regex), put on the GPT-2-style
# tokenizer's vocabulary and merges.
SMOLLM_PRE = {"type": "Sequence", "pretokenizers": [
    {"type": "Digits", "individual_digits": True},
    {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}]}
# Beside the shared sentence list: digits among spaces, where splitting digits first differs
# from one pattern over the text.
EXTRA = ["Call 555 1234  or 9  99 in 2024, not 3.14!", "a  5 b   67  c 8\t9\n10"]


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    sentences = (ROOT / "tests" / "hf" / "sentences.txt").read_text().splitlines() + EXTRA
    refs = {}
    for pre, folder in SOURCES.items():
        src = ROOT / "tests" / "hf" / "llama" / folder
        if pre == "smollm":
            import shutil
            import tempfile
            changed = Path(tempfile.mkdtemp())
            for f in src.iterdir():
                shutil.copy(f, changed / f.name)
            j = json.loads((src / "tokenizer.json").read_text())
            j["pre_tokenizer"] = SMOLLM_PRE
            (changed / "tokenizer.json").write_text(json.dumps(j))
            src = changed
        tok = AutoTokenizer.from_pretrained(str(src))
        j = json.loads((src / "tokenizer.json").read_text())
        vocab = j["model"]["vocab"]
        added = {a["id"]: a for a in j.get("added_tokens", [])}
        size = max(list(vocab.values()) + list(added)) + 1
        tokens, types = [], []
        by_id = {i: t for t, i in vocab.items()}
        for i in range(size):
            if i in added:
                tokens.append(added[i]["content"])
                types.append(3 if added[i]["special"] else 4)
            else:
                tokens.append(by_id[i])
                types.append(1)
        merges = [m if isinstance(m, str) else " ".join(m) for m in j["model"]["merges"]]
        w = GGUFWriter(str(OUT / f"{pre}.gguf"), "llama")
        for key, v in (("context_length", 64), ("embedding_length", 64), ("block_count", 1),
                       ("feed_forward_length", 64), ("attention.head_count", 2)):
            w.add_uint32(f"llama.{key}", v)
        w.add_string("tokenizer.ggml.model", "gpt2")
        w.add_string("tokenizer.ggml.pre", pre)
        w.add_array("tokenizer.ggml.tokens", tokens)
        w.add_array("tokenizer.ggml.token_type", types)
        w.add_array("tokenizer.ggml.merges", merges)
        if tok.bos_token_id is not None:
            w.add_uint32("tokenizer.ggml.bos_token_id", tok.bos_token_id)
        if tok.eos_token_id is not None:
            w.add_uint32("tokenizer.ggml.eos_token_id", tok.eos_token_id)
        first = tok.encode("a")
        w.add_bool("tokenizer.ggml.add_bos_token", tok.bos_token_id is not None and first[:1] == [tok.bos_token_id])
        w.write_header_to_file()
        w.write_kv_data_to_file()
        w.write_tensors_to_file()
        w.close()
        refs[pre] = [{"text": t, "ids": tok.encode(t),
                      "decoded": tok.decode(tok.encode(t), skip_special_tokens=True, clean_up_tokenization_spaces=False)}
                     for t in sentences]
        print(pre, size, "tokens", len(merges), "merges")
    (OUT / "references.json").write_text(json.dumps(refs, ensure_ascii=False, indent=0) + "\n")


if __name__ == "__main__":
    main()
