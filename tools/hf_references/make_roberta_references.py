"""Makes vkformer's RoBERTa and DistilBERT references with real `transformers` (4.36.2):

  tests/hf/roberta/base         a random RobertaModel (with its pooler): vocabulary 561,
                                hidden 64, 2 layers, 4 heads, FFN 96, padding_idx 1 and
                                positions from padding_idx + 1 (max_position_embeddings
                                66: 64 usable), one token type, eps 1e-5; its tokenizer
                                files: tests/hf/bart's vocab.json and merges.txt (BART's
                                byte-level BPE is RoBERTa's), and the tokenizer.json
                                RobertaTokenizerFast writes from them (RobertaProcessing)
  tests/hf/roberta/mlm          a random RobertaForMaskedLM (lm_head: dense, GELU,
                                layer_norm, the decoder tied to the word embeddings + bias)
  tests/hf/roberta/classifier   a random RobertaForSequenceClassification, 3 labels: its
                                head (dense, tanh, out_proj) on <s>, no pooler
  tests/hf/distilbert/mlm, classifier
                                a random DistilBertForMaskedLM and
                                DistilBertForSequenceClassification (pre_classifier, ReLU,
                                classifier), the same widths, 64 positions
  references.json (in each of the two folders)
                                per model and input (single sequences of 1 to 40 ids):
                                last_hidden_state, pooler_output where there is a pooler,
                                the head's logits, fp32; roberta's also the ids of
                                RobertaTokenizer and RobertaTokenizerFast for TEXTS, and
                                sentence-transformers' (2.7.0) mean-pooled embeddings of
                                TEXTS from tests/hf/roberta/base cut at 8 tokens

  /path/to/venv/bin/python tools/hf_references/make_roberta_references.py
"""
import json
import shutil
from pathlib import Path

import torch
import transformers
from random_weights import built
from transformers import (DistilBertConfig, DistilBertForMaskedLM, DistilBertForSequenceClassification, RobertaConfig,
                          RobertaForMaskedLM, RobertaForSequenceClassification, RobertaModel, RobertaTokenizer,
                          RobertaTokenizerFast)

ROOT = Path(__file__).resolve().parents[2] / "tests" / "hf"
VOCAB = 300
LABELS = dict(num_labels=3, id2label={0: "negative", 1: "neutral", 2: "positive"},
              label2id={"negative": 0, "neutral": 1, "positive": 2})
TEXTS = ["Hello world", " leading space", "The date is 3/3/98.", "Café naïve 😀", "<mask> in the middle", ""]


def inputs(bos, eos, first):
    g = torch.Generator().manual_seed(5)
    out = [[bos, 7, eos], [bos]]
    for n in (17, 40):
        out.append([bos] + [int(x) for x in torch.randint(first, VOCAB, (n - 2,), generator=g)] + [eos])
    return out


def run(models, out_dir, ids_list, pooler_models=()):
    refs = {}
    for name, model in models.items():
        out = out_dir / name
        if out.exists():
            shutil.rmtree(out)
        model.save_pretrained(out)
        refs[name] = []
        with torch.no_grad():
            for ids in ids_list:
                o = model(input_ids=torch.tensor([ids]), output_hidden_states=True)
                entry = {"ids": ids, "last_hidden_state": o.hidden_states[-1][0].flatten().tolist()}
                if name in pooler_models:
                    entry["pooler_output"] = o.pooler_output[0].tolist()
                elif hasattr(o, "logits"):
                    entry["logits"] = o.logits[0].flatten().tolist()
                refs[name].append(entry)
    return refs


def main():
    # vocabulary 561: tests/hf/bart's byte-level BPE, whose files RoBERTa's tokenizer reads
    rcfg = dict(vocab_size=561, hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=96,
                max_position_embeddings=66, type_vocab_size=1, layer_norm_eps=1e-5, hidden_act="gelu", pad_token_id=1,
                bos_token_id=0, eos_token_id=2)
    roberta = {"base": built(lambda: RobertaModel(RobertaConfig(**rcfg)), 31),
               "mlm": built(lambda: RobertaForMaskedLM(RobertaConfig(**rcfg)), 32),
               "classifier": built(lambda: RobertaForSequenceClassification(RobertaConfig(**rcfg, **LABELS)), 33)}
    out = ROOT / "roberta"
    refs = run(roberta, out, inputs(0, 2, 4), pooler_models=("base",))
    # The tokenizer: BART's test vocabulary (byte-level BPE, <s> </s> <unk> <pad> <mask>).
    bart = ROOT / "bart"
    for f in ("vocab.json", "merges.txt"):
        shutil.copy(bart / f, out / "base" / f)
    slow = RobertaTokenizer(str(out / "base" / "vocab.json"), str(out / "base" / "merges.txt"))
    fast = RobertaTokenizerFast(str(out / "base" / "vocab.json"), str(out / "base" / "merges.txt"))
    fast.backend_tokenizer.save(str(out / "base" / "tokenizer.json"))
    tokenizer = {"texts": TEXTS, "slow": [slow(t)["input_ids"] for t in TEXTS],
                 "fast": [fast(t)["input_ids"] for t in TEXTS]}
    assert tokenizer["slow"] == tokenizer["fast"], tokenizer
    # sentence-transformers over the same directory (no modules.json: a Transformer and
    # mean pooling, as it wraps a plain model), cut at 8 tokens.
    from sentence_transformers import SentenceTransformer, models
    st = SentenceTransformer(modules=[models.Transformer(str(out / "base"), max_seq_length=8),
                                      models.Pooling(64, pooling_mode_mean_tokens=True)], device="cpu")
    tokenizer["sentence_embeddings_cut_8"] = st.encode(TEXTS, convert_to_tensor=True).tolist()
    (out / "references.json").write_text(json.dumps({"transformers_version": transformers.__version__, "models": refs,
                                                     "tokenizer": tokenizer}) + "\n")

    dcfg = dict(vocab_size=VOCAB, dim=64, n_layers=2, n_heads=4, hidden_dim=96, max_position_embeddings=64,
                activation="gelu", pad_token_id=0)
    distil = {"mlm": built(lambda: DistilBertForMaskedLM(DistilBertConfig(**dcfg)), 41),
              "classifier": built(lambda: DistilBertForSequenceClassification(DistilBertConfig(**dcfg, **LABELS)), 42)}
    out = ROOT / "distilbert"
    refs = run(distil, out, inputs(101, 102, 3))
    (out / "references.json").write_text(json.dumps({"transformers_version": transformers.__version__,
                                                     "models": refs}) + "\n")
    print("wrote", ROOT / "roberta", ROOT / "distilbert")


if __name__ == "__main__":
    main()
