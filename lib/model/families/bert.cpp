// The encoder-only families: BERT (model_type "bert"), RoBERTa ("roberta") and DistilBERT
// ("distilbert"), one layout under three sets of names. Word, learned position and (BERT,
// RoBERTa) token-type embeddings summed, then their LayerNorm (the encoder's input norm),
// post-norm layers with erf GELU, no final norm. Heads, where the checkpoint has one:
//   BERT       the pooler (tanh of a dense layer over each sequence's first token);
//              BertForMaskedLM's cls.predictions (dense, GELU, LayerNorm, the decoder
//              tied to the word embeddings and its bias); BertForSequenceClassification's
//              classifier on the pooled output
//   RoBERTa    positions counted from padding_idx + 1 (RobertaEmbeddings); RobertaModel's
//              pooler; RobertaForMaskedLM's lm_head (as BERT's); RobertaForSequence-
//              Classification's classifier.dense (tanh) and out_proj on <s>, no pooler
//   DistilBERT no token types; DistilBertForMaskedLM's vocab_transform, vocab_layer_norm
//              and vocab_projector; DistilBertForSequenceClassification's pre_classifier
//              (ReLU) and classifier on [CLS]
// id2label names a classifier's labels. BERT and DistilBERT take WordPiece, RoBERTa
// byte-level BPE (BART's).
#include "bart_tokenizer.hpp"
#include "family.hpp"
#include "hugging_face.hpp"
#include "wordpiece_tokenizer.hpp"

namespace vkf::model {

namespace {

enum class Flavour { Bert, Roberta, DistilBert };

// A classifier's labels: id2label's names by id ("0", "1", ... each once).
std::vector<std::string> labels_of(const ConfigReader& r) {
  const auto& map = r.need("id2label");
  if (!map.is_object() || map.empty() || map.size() > 65536) r.fail("field 'id2label' must map label ids to names");
  std::vector<std::string> labels(map.size());
  std::vector<bool> seen(map.size(), false);
  for (const auto& [id, name] : map.items()) {
    size_t at = 0;
    uint64_t i = 0;
    try {
      i = std::stoull(id, &at);
    } catch (const std::exception&) {
      at = 0;
    }
    if (at != id.size() || i >= map.size() || seen[i] || !name.is_string())
      r.fail("field 'id2label' must map each of the ids 0 to " + std::to_string(map.size() - 1) + " to a name once");
    seen[i] = true;
    labels[i] = name.get<std::string>();
  }
  return labels;
}

std::string architecture(const ConfigReader& r) {
  const auto& j = r.json();
  return j.contains("architectures") && j["architectures"].is_array() && !j["architectures"].empty() &&
                 j["architectures"][0].is_string()
             ? j["architectures"][0].get<std::string>()
             : std::string();
}

ModelConfig read_config_as(const ModelFiles& files, Flavour flavour) {
  const ConfigReader r(files, "config.json");
  ModelConfig c;
  c.architecture = r.string("model_type");
  const char* expected = flavour == Flavour::Bert ? "bert" : flavour == Flavour::Roberta ? "roberta" : "distilbert";
  if (c.architecture != expected) r.fail("model_type '" + c.architecture + "' is not " + expected);
  c.hugging_face = true;
  c.kind = ModelKind::EncoderOnly;
  const bool distil = flavour == Flavour::DistilBert;
  c.d_model = r.count(distil ? "dim" : "hidden_size", 1);
  c.nhead = r.count(distil ? "n_heads" : "num_attention_heads", 1);
  if (c.d_model % c.nhead)
    r.fail("the width " + std::to_string(c.d_model) + " is not divisible by the " + std::to_string(c.nhead) + " heads");
  c.dim_feedforward = r.count(distil ? "hidden_dim" : "intermediate_size", 1);
  c.num_encoder_layers = r.count(distil ? "n_layers" : "num_hidden_layers", 0);
  c.num_decoder_layers = 0;
  c.src_vocab_size = r.count("vocab_size", 1);
  c.tgt_vocab_size = c.src_vocab_size;
  const uint32_t positions = r.count("max_position_embeddings", 1);
  c.pad_id = r.has("pad_token_id") ? r.count("pad_token_id", 0, c.src_vocab_size - 1) : (flavour == Flavour::Roberta ? 1 : 0);
  c.max_position = positions;
  if (flavour == Flavour::Roberta) {
    // RobertaEmbeddings counts positions from padding_idx + 1 (the rows before are the
    // padding's and unused): a sequence may take the rest.
    if (positions <= c.pad_id + 1)
      r.fail("max_position_embeddings " + std::to_string(positions) + " leaves no position after padding_idx " +
             std::to_string(c.pad_id) + " + 1");
    c.max_position = positions - c.pad_id - 1;
  }
  c.token_types = distil ? 0 : r.has("type_vocab_size") ? r.count("type_vocab_size", 1, 1u << 16) : 2;
  c.layer_norm_eps = distil ? 1e-12f : r.has("layer_norm_eps") ? r.number("layer_norm_eps", 0, 1) : 1e-12f;
  const char* act_field = distil ? "activation" : "hidden_act";
  const std::string act = r.has(act_field) ? r.string(act_field) : "gelu";
  if (act != "gelu")
    r.fail(std::string("field '") + act_field + "' is '" + act + "': vkformer runs " + expected + " with gelu (erf)");
  c.activation = Activation::Gelu;
  if (r.has("position_embedding_type") && r.string("position_embedding_type") != "absolute")
    r.fail("field 'position_embedding_type' is '" + r.string("position_embedding_type") +
           "': vkformer runs absolute positions only");
  if (r.has("is_decoder") && r.flag("is_decoder")) r.fail("field 'is_decoder' is true: vkformer runs it as an encoder");
  c.norm_first = false;
  c.positions = ModelConfig::Positions::Learned;
  c.embedding_norm = true;
  c.final_norms = false;
  const std::string arch = architecture(r);
  if (arch == "BertForSequenceClassification" || arch == "RobertaForSequenceClassification" ||
      arch == "DistilBertForSequenceClassification")
    c.labels = labels_of(r);
  return c;
}

ModelConfig read_bert(const ModelFiles& files) { return read_config_as(files, Flavour::Bert); }
ModelConfig read_roberta(const ModelFiles& files) { return read_config_as(files, Flavour::Roberta); }
ModelConfig read_distilbert(const ModelFiles& files) { return read_config_as(files, Flavour::DistilBert); }

// A masked-LM head: dense, the activation, a LayerNorm, then the decoder tied to the word
// embeddings (untied where tie_word_embeddings is false) plus its bias, which a file
// carries once or twice (as the decoder's bias too).
void declare_mlm_head(Checkpoint& t, Model::Impl& m, const std::string& dense, const std::string& norm,
                      const std::string& decoder, const std::string& bias, const std::string& bias_alias) {
  const uint32_t D = m.config.d_model, V = m.config.src_vocab_size;
  t.linear(m.mlm_transform, dense, D, D);
  t.norm(m.mlm_norm, norm, D);
  const ConfigReader r(t.files(), "config.json");
  const bool tied = !r.has("tie_word_embeddings") || r.flag("tie_word_embeddings");  // the configs' default
  if (!tied) {
    t.linear_weight(m.mlm_decoder, decoder, V, D);
  } else {
    if (t.has(decoder)) t.unread(decoder, {V, D});  // the tied copy a file may carry
    t.tied_head(m.mlm_decoder, m.src_embed, m.src_embed_blocks, V, D);
  }
  t.tensor(m.mlm_bias, bias, {V});
  if (!bias_alias.empty() && t.has(bias_alias)) t.unread(bias_alias, {V});
}

void declare_as(Checkpoint& t, Model::Impl& m, Flavour flavour) {
  const ModelConfig& c = m.config;
  const uint32_t D = c.d_model, F = c.dim_feedforward;
  const bool distil = flavour == Flavour::DistilBert;
  // The model's own names, or under its prefix in a *For* checkpoint.
  const std::string prefix = flavour == Flavour::Bert ? "bert." : flavour == Flavour::Roberta ? "roberta." : "distilbert.";
  const std::string p = t.has(prefix + "embeddings.word_embeddings.weight") ? prefix : "";
  const std::string e = p + "embeddings.";
  t.embedding(m.src_embed, m.src_embed_blocks, e + "word_embeddings.weight", c.src_vocab_size, D);
  // RoBERTa's table holds padding_idx + 1 rows before the first position.
  const uint32_t first = flavour == Flavour::Roberta ? c.pad_id + 1 : 0;
  t.fp32_rows(m.positions, e + "position_embeddings.weight", {uint64_t(c.max_position) + first, D}, first, c.max_position);
  if (c.token_types) t.fp32_rows(m.token_types, e + "token_type_embeddings.weight", {c.token_types, D}, 0, c.token_types);
  t.norm(m.encoder_embed_norm, e + "LayerNorm", D);
  t.unread(e + "position_ids");   // a buffer older saves carry
  t.unread(e + "token_type_ids");  // (RoBERTa's)
  const std::string layers = p + (distil ? "transformer.layer" : "encoder.layer");
  t.layers(layers, c.num_encoder_layers, distil ? "n_layers" : "num_hidden_layers");
  m.encoder.resize(c.num_encoder_layers);
  for (uint32_t i = 0; i < c.num_encoder_layers; ++i) {
    const std::string l = layers + "." + std::to_string(i) + ".";
    EncoderLayer& to = m.encoder[i];
    if (distil) {
      const std::string a = l + "attention.";
      t.stacked(to.self_qkv, {{a + "q_lin", D}, {a + "k_lin", D}, {a + "v_lin", D}}, D, true);
      t.linear(to.self_out, a + "out_lin", D, D);
      t.norm(to.norm1, l + "sa_layer_norm", D);       // x = LN1(x + SelfAttn(x))
      t.linear(to.ffn.linear1, l + "ffn.lin1", F, D);
      t.linear(to.ffn.linear2, l + "ffn.lin2", D, F);
      t.norm(to.norm2, l + "output_layer_norm", D);   // x = LN2(x + FFN(x))
    } else {
      const std::string a = l + "attention.";
      t.stacked(to.self_qkv, {{a + "self.query", D}, {a + "self.key", D}, {a + "self.value", D}}, D, true);
      t.linear(to.self_out, a + "output.dense", D, D);
      t.norm(to.norm1, a + "output.LayerNorm", D);    // x = LN1(x + SelfAttn(x))
      t.linear(to.ffn.linear1, l + "intermediate.dense", F, D);
      t.linear(to.ffn.linear2, l + "output.dense", D, F);
      t.norm(to.norm2, l + "output.LayerNorm", D);    // x = LN2(x + FFN(x))
    }
  }
  if (!distil && t.has(p + "pooler.dense.weight")) t.linear(m.pooler, p + "pooler.dense", D, D);
  if (flavour == Flavour::Bert && t.has("cls.predictions.transform.dense.weight"))
    declare_mlm_head(t, m, "cls.predictions.transform.dense", "cls.predictions.transform.LayerNorm",
                     "cls.predictions.decoder.weight", "cls.predictions.bias", "cls.predictions.decoder.bias");
  if (flavour == Flavour::Roberta && t.has("lm_head.dense.weight"))
    declare_mlm_head(t, m, "lm_head.dense", "lm_head.layer_norm", "lm_head.decoder.weight", "lm_head.bias",
                     "lm_head.decoder.bias");
  if (distil && t.has("vocab_transform.weight"))
    declare_mlm_head(t, m, "vocab_transform", "vocab_layer_norm", "vocab_projector.weight", "vocab_projector.bias",
                     "");
  if (c.labels.empty()) return;
  const uint32_t L = uint32_t(c.labels.size());
  switch (flavour) {
    case Flavour::Bert:  // on the pooled output
      if (!t.has(p + "pooler.dense.weight"))
        throw Error(t.files().label() + ": a sequence classifier without " + p + "pooler.dense: its classifier reads the pooled output");
      t.linear(m.classifier, "classifier", L, D);
      break;
    case Flavour::Roberta:  // RobertaClassificationHead: out_proj(tanh(dense(h[<s>])))
      t.linear(m.classifier_dense, "classifier.dense", D, D);
      t.linear(m.classifier, "classifier.out_proj", L, D);
      break;
    case Flavour::DistilBert:  // classifier(ReLU(pre_classifier(h[CLS])))
      t.linear(m.classifier_dense, "pre_classifier", D, D);
      m.classifier_activation = Activation::Relu;
      t.linear(m.classifier, "classifier", L, D);
      break;
  }
}

void declare_bert(Checkpoint& t, Model::Impl& m) { declare_as(t, m, Flavour::Bert); }
void declare_roberta(Checkpoint& t, Model::Impl& m) { declare_as(t, m, Flavour::Roberta); }
void declare_distilbert(Checkpoint& t, Model::Impl& m) { declare_as(t, m, Flavour::DistilBert); }

std::unique_ptr<Tokenizer> wordpiece(const ModelFiles& files, const ConfigReader& config) {
  return WordPieceTokenizer::for_model(files, config.count("vocab_size", 1));
}

// RoBERTa's byte-level BPE: tokenizer.json where there is one (RobertaTokenizerFast),
// else vocab.json + merges.txt (RobertaTokenizer: BartTokenizer's rules).
std::unique_ptr<Tokenizer> roberta_bpe(const ModelFiles& files, const ConfigReader& config) {
  const uint32_t vocab = config.count("vocab_size", 1);
  if (files.has("tokenizer.json")) return BartTokenizer::from_tokenizer_json(files, vocab);
  return std::make_unique<BartTokenizer>(files, vocab);
}

}  // namespace

const Family kBert{"bert", true, ModelTask::Encoder, read_bert, hf_checkpoint, declare_bert, wordpiece,
                   {"tokenizer.json", "vocab.txt"}};
const Family kRoberta{"roberta", true, ModelTask::Encoder, read_roberta, hf_checkpoint, declare_roberta, roberta_bpe,
                      {"tokenizer.json", "vocab.json"}};
const Family kDistilBert{"distilbert", true, ModelTask::Encoder, read_distilbert, hf_checkpoint, declare_distilbert,
                         wordpiece, {"tokenizer.json", "vocab.txt"}};

}  // namespace vkf::model
