"""Makes vkformer's sampling references (tests/hf/sampling_references.json) with real
`transformers` (4.36.2): for Marian and BART (encoder-decoders, their generation_config.json
processors: bad words, forced BOS and EOS, min_length, no-repeat n-grams) and a Llama
(decoder-only, with no_repeat_ngram_size 1 over its prompt, which vkformer samples on the
host, and without, "llama/gqa:gpu", which it samples on the GPU), the distribution generate()
draws its first free token from when sampling at temperature 0.8, top_k 20, top_p 0.9:
softmax of the scores after its processors and warpers (output_scores), at the first step
that is not forced (BART forces its first token), after the forced tokens.

  /path/to/venv/bin/python tools/hf_references/make_sampling_references.py
"""
import json
from pathlib import Path

import torch
import transformers
from transformers import AutoModelForCausalLM, AutoModelForSeq2SeqLM

ROOT = Path(__file__).resolve().parents[2] / "tests" / "hf"
WARPERS = {"temperature": 0.8, "top_k": 20, "top_p": 0.9}


def first_free_step(model, ids, extra):
    with torch.no_grad():
        out = model.generate(ids, do_sample=True, num_beams=1, max_new_tokens=4, output_scores=True,
                             return_dict_in_generate=True, **WARPERS, **extra)
    for step, scores in enumerate(out.scores):
        probs = torch.softmax(scores[0].double(), dim=-1)
        if (probs > 0).sum() > 1:
            forced = out.sequences[0, -len(out.scores):][:step].tolist()
            return step, forced, probs.tolist()
    raise RuntimeError("every step forced")


def main():
    refs = {"transformers": transformers.__version__, "warpers": WARPERS, "models": {}}
    for name, cls, ids, extra in (
            ("marian", AutoModelForSeq2SeqLM, [5, 17, 9, 33, 0], {}),
            ("bart", AutoModelForSeq2SeqLM, [0, 5, 17, 9, 33, 2], {}),
            ("llama/gqa", AutoModelForCausalLM, [5, 17, 9, 33, 41], {"no_repeat_ngram_size": 1}),
            ("llama/gqa:gpu", AutoModelForCausalLM, [5, 17, 9, 33, 41], {})):
        model = cls.from_pretrained(str(ROOT / name.split(":")[0])).eval()
        torch.manual_seed(0)
        step, forced, probs = first_free_step(model, torch.tensor([ids]), extra)
        refs["models"][name] = {"ids": ids, "extra": extra, "step": step, "forced": forced, "probs": probs}
        kept = sum(p > 0 for p in probs)
        print(name, "step", step, "forced", forced, "tokens kept", kept)
    (ROOT / "sampling_references.json").write_text(json.dumps(refs) + "\n")


if __name__ == "__main__":
    main()
