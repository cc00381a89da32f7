#!/usr/bin/python3
"""Makes vkformer's GPT-2 references (tests/hf/gpt2/) with real `transformers`:

  tests/hf/gpt2/lm/        a random GPT2LMHeadModel saved by save_pretrained (weights
                           under "transformer.", lm_head tied and dropped)
  tests/hf/gpt2/base/      the same weights as a GPT2Model (no prefix, no lm_head)
  tests/hf/gpt2/sharded/   the same weights in shards (model.safetensors.index.json)
  tests/hf/gpt2/bf16/      the same weights saved in bfloat16
  tests/hf/gpt2/eos/       another random model whose eos_token_id is in its vocabulary
  tests/hf/gpt2/references.json
                           per model: prompts (token ids, used as given), their logits
                           at every position, and greedy generate() continuations

Random weights are scaled up from GPT-2's initialisation (std 0.02 gives logits within
1e-3 of each other, where greedy decoding is a coin toss) and the LayerNorms are
randomised, so the checks see every weight. Run with transformers 4.36.2 (and its
`tokenizers`, `safetensors`, `huggingface_hub`) on Debian's torch:

  PYTHONPATH=/path/to/site-packages /usr/bin/python3 tools/hf_references/make_gpt2_references.py
"""
import json
import shutil
from pathlib import Path

import torch
import transformers
from transformers import GPT2Config, GPT2LMHeadModel

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "tests" / "hf" / "gpt2"
PROMPTS = [[5, 17, 9], [42], [7, 7, 7, 7, 7, 7], [int(x) for x in torch.randint(0, 300, (20,), generator=torch.Generator().manual_seed(3))]]
NEW_TOKENS = 12


def random_model(seed, **config):
    torch.manual_seed(seed)
    cfg = GPT2Config(n_embd=48, n_layer=2, n_head=4, n_positions=64, vocab_size=300, resid_pdrop=0.0, embd_pdrop=0.0,
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


def references(model):
    out = []
    with torch.no_grad():
        for ids in PROMPTS:
            x = torch.tensor([ids])
            logits = model(x).logits[0].float()
            gen = model.generate(x, max_new_tokens=NEW_TOKENS, do_sample=False,
                                 pad_token_id=model.config.eos_token_id)[0, len(ids):]
            out.append({"ids": ids, "logits": logits.flatten().tolist(), "greedy": gen.tolist()})
    return out


def main():
    if OUT.exists():
        shutil.rmtree(OUT)
    OUT.mkdir(parents=True)
    refs = {"transformers_version": transformers.__version__, "new_tokens": NEW_TOKENS, "models": {}}

    lm = random_model(1)
    lm.save_pretrained(OUT / "lm")
    refs["models"]["lm"] = references(lm)
    refs["models"]["sharded"] = refs["models"]["lm"]
    lm.save_pretrained(OUT / "sharded", max_shard_size="40KB")
    lm.transformer.save_pretrained(OUT / "base")
    refs["models"]["base"] = refs["models"]["lm"]

    bf16 = random_model(1).to(torch.bfloat16)
    bf16.save_pretrained(OUT / "bf16")
    refs["models"]["bf16"] = references(bf16.float())  # the rounded weights, computed in fp32

    eos = random_model(2, eos_token_id=11, bos_token_id=11)
    eos.save_pretrained(OUT / "eos")
    refs["models"]["eos"] = references(eos)

    for d in OUT.iterdir():
        if d.is_dir():
            (d / "generation_config.json").unlink(missing_ok=True)  # defaults only; the test passes its settings
    with open(OUT / "references.json", "w") as f:
        json.dump(refs, f)
    print("wrote", OUT)


if __name__ == "__main__":
    main()
