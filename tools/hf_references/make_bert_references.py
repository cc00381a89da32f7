"""Makes vkformer's BERT references (tests/hf/bert/ and tests/hf/bert/references.json)
with real `transformers`:

  tests/hf/bert/base    a random BertModel (with its pooler) saved by save_pretrained:
                        vocabulary 300, hidden 64, 2 layers, 4 heads, FFN 96, 64
                        positions, 2 token types, erf GELU, LayerNorm eps 1e-12
  tests/hf/bert/mlm     a random BertForMaskedLM of the same shape (no pooler; the
                        masked-LM head: dense, GELU, LayerNorm, the decoder tied to the
                        word embeddings plus its bias)
  tests/hf/bert/classifier
                        a random BertForSequenceClassification, 3 labels with id2label
  references.json       per model and input (ids with token types, single sequences of 1
                        to 40 tokens): last_hidden_state [n, 64], pooler_output [64] where
                        there is a pooler, and the head's logits ([n, 300] masked-LM,
                        [3] classification), fp32

Run with transformers 4.36.2 on Debian's torch (a venv with --system-site-packages):

  /path/to/venv/bin/python tools/hf_references/make_bert_references.py
"""
import json
import shutil
from pathlib import Path

import torch
import transformers
from transformers import BertConfig, BertForMaskedLM, BertForSequenceClassification, BertModel

OUT = Path(__file__).resolve().parents[2] / "tests" / "hf" / "bert"
VOCAB = 300


def randomised(model, seed):
    torch.manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "LayerNorm" in name:
                p.copy_((1 if name.endswith("weight") else 0) + 0.3 * torch.randn_like(p))
            elif name.endswith("bias"):
                p.copy_(0.3 * torch.randn_like(p))
            else:
                p.mul_(8.0)  # std 0.16: activations of order one
    return model.eval()


def main():
    torch.manual_seed(21)
    cfg = dict(vocab_size=VOCAB, hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=96,
               max_position_embeddings=64, type_vocab_size=2, layer_norm_eps=1e-12, hidden_act="gelu", pad_token_id=0)
    models = {"base": randomised(BertModel(BertConfig(**cfg)), 21),
              "mlm": randomised(BertForMaskedLM(BertConfig(**cfg)), 22),
              "classifier": randomised(BertForSequenceClassification(
                  BertConfig(**cfg, num_labels=3, id2label={0: "negative", 1: "neutral", 2: "positive"},
                             label2id={"negative": 0, "neutral": 1, "positive": 2})), 23)}
    g = torch.Generator().manual_seed(5)
    inputs = [([101, 7, 102], [0, 0, 0]), ([101], [0])]
    for n in (17, 40):
        ids = [101] + [int(x) for x in torch.randint(3, VOCAB, (n - 2,), generator=g)] + [102]
        types = [0] * (n // 2) + [1] * (n - n // 2)
        inputs.append((ids, types))
    refs = {}
    for name, model in models.items():
        out = OUT / name
        if out.exists():
            shutil.rmtree(out)
        model.save_pretrained(out)
        refs[name] = []
        with torch.no_grad():
            for ids, types in inputs:
                o = model(input_ids=torch.tensor([ids]), token_type_ids=torch.tensor([types]), output_hidden_states=True)
                entry = {"ids": ids, "token_types": types, "last_hidden_state": o.hidden_states[-1][0].flatten().tolist()}
                if name == "base":
                    entry["pooler_output"] = o.pooler_output[0].tolist()
                else:
                    entry["logits"] = o.logits[0].flatten().tolist()
                refs[name].append(entry)
    (OUT / "references.json").write_text(json.dumps({"transformers_version": transformers.__version__,
                                                     "models": refs}) + "\n")
    print("wrote", OUT)


if __name__ == "__main__":
    main()
