"""Makes vkformer's Llama with both weights and a tokenizer (tests/hf/llama/with_tokenizer/
and with_tokenizer_references.json) with real `transformers`: a random LlamaForCausalLM
of tokenizer_llama3's 360 tokens (Llama 3's layout: its split pattern, byte-level BPE,
<|begin_of_text|> before every text, <|end_of_text|> its EOS), grouped-query attention,
64 positions, saved by save_pretrained beside that tokenizer.json. The references are
what a user sees with generate()'s defaults as vkformer takes them: greedy, max_new_tokens
64 cut to the positions the prompt leaves (65 - prompt length), stopping at EOS; per text
prompt its ids, the new ids and their text (skip_special_tokens).

Run with transformers 4.36.2 (and its `tokenizers`, `safetensors`, `huggingface_hub`) on
Debian's torch, after make_llama_references.py (which writes tokenizer_llama3/):

  PYTHONPATH=/path/to/site-packages /usr/bin/python3 tools/hf_references/make_llama_tokenizer_model_references.py
"""
import json
import shutil
import sys
from pathlib import Path

import torch
import transformers
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_llama_references import OUT, randomised  # noqa: E402

PROMPTS = ["The date is", "Hello world", "日本語 text, and ünïcödé."]
POSITIONS = 64


def main():
    tok = PreTrainedTokenizerFast.from_pretrained(OUT / "tokenizer_llama3")
    torch.manual_seed(9)
    cfg = LlamaConfig(vocab_size=len(tok), hidden_size=32, intermediate_size=48, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=POSITIONS,
                      rms_norm_eps=1e-5, bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id,
                      tie_word_embeddings=False)
    model = randomised(LlamaForCausalLM(cfg), 9)
    out = OUT / "with_tokenizer"
    if out.exists():
        shutil.rmtree(out)
    model.save_pretrained(out)
    for f in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        shutil.copy(OUT / "tokenizer_llama3" / f, out / f)
    refs = {"transformers_version": transformers.__version__, "prompts": []}
    with torch.no_grad():
        for text in PROMPTS:
            ids = tok(text)["input_ids"]
            new = min(64, POSITIONS - len(ids) + 1)
            gen = model.generate(torch.tensor([ids]), max_new_tokens=new, do_sample=False,
                                 pad_token_id=tok.eos_token_id)[0, len(ids):].tolist()
            refs["prompts"].append({"text": text, "ids": ids, "max_new_tokens": new, "greedy": gen,
                                    "greedy_text": tok.decode(gen, skip_special_tokens=True)})
    with open(OUT / "with_tokenizer_references.json", "w") as f:
        json.dump(refs, f, ensure_ascii=False)
    print("wrote", out)


if __name__ == "__main__":
    main()
