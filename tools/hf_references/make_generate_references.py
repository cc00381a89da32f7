"""Makes vkformer's references for transformers' generate() on decoder-only models
(tests/hf/generate_references.json) with real `transformers` (4.36.2):

  tests/hf/llama/eos_often   tests/hf/llama/gqa's weights with eos_token_id set to a token
                             the model often predicts (so beams end, and the processors that
                             ban EOS matter); pad_token_id unset, as in gqa (generate() pads
                             with EOS, as vkformer does)
  generate_references.json   for each model (gpt2/lm, llama/gqa, llama/eos_often,
                             llama/mistral), prompt set (one prompt; three of 2, 5 and 7 tokens
                             left-padded with the pad id, attention mask 0 there, where the
                             pad id is a token of the vocabulary) and case
                             (greedy with each processor: repetition penalty,
                             no_repeat_ngram_size, bad_words_ids, min_length,
                             min_new_tokens, forced_eos_token_id, all together; beam search
                             of widths 2 and 4 under early_stopping True, False and "never",
                             length penalties 0.5, 1 and 2, num_return_sequences 2, with
                             processors): the new tokens of every output (EOS included; the
                             padding generate() puts after a finished output taken off), and
                             the greedy outputs' step scores' top-2 gap, for the near-tie rule

  /path/to/venv/bin/python tools/hf_references/make_generate_references.py
"""
import json
import shutil
from pathlib import Path

import torch
import transformers
from transformers import AutoModelForCausalLM

ROOT = Path(__file__).resolve().parents[2] / "tests" / "hf"
NEW = 12

CASES = {
    "greedy": {},
    "repetition_penalty": {"repetition_penalty": 1.5},
    "no_repeat_ngram": {"no_repeat_ngram_size": 2},
    "bad_words": {"bad_words_ids": "BAD"},
    "min_length": {"min_length": "P+8"},
    "min_new_tokens": {"min_new_tokens": 8},
    "forced_eos": {"forced_eos_token_id": "EOS"},
    "all_processors": {"repetition_penalty": 1.3, "no_repeat_ngram_size": 3, "bad_words_ids": "BAD",
                       "min_new_tokens": 4},
    "beam2": {"num_beams": 2},
    "beam4": {"num_beams": 4},
    "beam4_early_true": {"num_beams": 4, "early_stopping": True},
    "beam4_never": {"num_beams": 4, "early_stopping": "never"},
    "beam4_lp_half": {"num_beams": 4, "length_penalty": 0.5},
    "beam4_lp_2": {"num_beams": 4, "length_penalty": 2.0},
    "beam2_never_lp_2": {"num_beams": 2, "early_stopping": "never", "length_penalty": 2.0},
    "beam4_return2": {"num_beams": 4, "num_return_sequences": 2},
    "beam3_processors": {"num_beams": 3, "no_repeat_ngram_size": 2, "repetition_penalty": 1.2, "bad_words_ids": "BAD",
                         "min_new_tokens": 3},
}


def eos_often():
    """gqa with eos_token_id set to the token its greedy runs predict most often."""
    src, out = ROOT / "llama" / "gqa", ROOT / "llama" / "eos_often"
    model = AutoModelForCausalLM.from_pretrained(str(src)).eval()
    counts = torch.zeros(model.config.vocab_size)
    g = torch.Generator().manual_seed(7)
    with torch.no_grad():
        for _ in range(8):
            ids = torch.randint(3, model.config.vocab_size, (1, 5), generator=g)
            seq = model.generate(ids, max_new_tokens=12, do_sample=False, eos_token_id=None, pad_token_id=0)[0, 5:]
            counts += torch.bincount(seq, minlength=model.config.vocab_size)
    eos = int(torch.argmax(counts))
    if out.exists():
        shutil.rmtree(out)
    out.mkdir()
    shutil.copy(src / "model.safetensors", out / "model.safetensors")
    config = json.loads((src / "config.json").read_text())
    config["eos_token_id"] = eos
    (out / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    gen = json.loads((src / "generation_config.json").read_text())
    gen["eos_token_id"] = eos
    (out / "generation_config.json").write_text(json.dumps(gen, indent=2) + "\n")
    return eos


def main():
    eos_often()
    refs = {"transformers": transformers.__version__, "max_new_tokens": NEW, "models": {}}
    for name in ("gpt2/lm", "llama/gqa", "llama/eos_often", "llama/mistral"):
        model = AutoModelForCausalLM.from_pretrained(str(ROOT / name)).eval()
        cfg = model.config
        eos, V = cfg.eos_token_id, cfg.vocab_size
        pad = cfg.pad_token_id if cfg.pad_token_id is not None else eos
        g = torch.Generator().manual_seed(11)
        prompts = {"single": [torch.randint(3, V, (6,), generator=g).tolist()],
                   "batch": [torch.randint(3, V, (n,), generator=g).tolist() for n in (2, 5, 7)]}
        if pad >= V:  # (the random GPT-2's EOS, 50256, is no row of its embedding: nothing to pad with)
            del prompts["batch"]
        entry = {"eos": eos, "pad": pad, "prompts": prompts, "cases": {}}
        for case, kwargs in CASES.items():
            if eos >= V and any(k in kwargs for k in ("min_length", "min_new_tokens", "forced_eos_token_id")):
                continue  # transformers bans or forces an EOS it cannot index (the random GPT-2's)
            entry["cases"][case] = {}
            for pname, plist in prompts.items():
                P = max(len(p) for p in plist)
                ids = torch.tensor([[pad] * (P - len(p)) + p for p in plist])
                mask = torch.tensor([[0] * (P - len(p)) + [1] * len(p) for p in plist])
                kw = dict(kwargs)
                if kw.get("bad_words_ids") == "BAD":
                    # a single token the model likes, and a pair from the first prompt
                    kw["bad_words_ids"] = [[int(plist[0][-1])], [int(plist[0][0]), int(plist[0][1])]]
                if kw.get("min_length") == "P+8":
                    kw["min_length"] = P + 8
                if kw.get("forced_eos_token_id") == "EOS":
                    kw["forced_eos_token_id"] = eos if eos < V else 0
                with torch.no_grad():
                    out = model.generate(ids, attention_mask=mask, max_new_tokens=NEW, do_sample=False, pad_token_id=pad,
                                         eos_token_id=eos, output_scores=True, return_dict_in_generate=True, **kw)
                seqs = out.sequences[:, P:].tolist()
                # A finished output is padded after its EOS: keep it to its EOS.
                trimmed = []
                for s in seqs:
                    if eos in s:
                        s = s[:s.index(eos) + 1]
                    trimmed.append(s)
                record = {"kwargs": kw, "outputs": trimmed}
                if "num_beams" not in kw:  # greedy: the gap between the two best scores at each step
                    gaps = []
                    for step in out.scores:
                        top = torch.topk(step.float(), 2, dim=-1).values
                        gap = (top[:, 0] - top[:, 1]).nan_to_num(nan=1e30, posinf=1e30)  # a lone candidate: no tie
                        gaps.append(gap.tolist())
                    record["top2_gaps"] = gaps
                entry["cases"][case][pname] = record
        refs["models"][name] = entry
        print(name, "eos", eos, {c: entry["cases"][c]["single"]["outputs"][0][:6] for c in ("greedy", "beam4")})
    (ROOT / "generate_references.json").write_text(json.dumps(refs) + "\n")
    print("wrote", ROOT / "generate_references.json")


if __name__ == "__main__":
    main()
