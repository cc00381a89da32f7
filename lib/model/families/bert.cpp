// The BERT family (transformers' BertModel, model_type "bert"): an encoder alone. Word,
// learned position and token-type embeddings summed, then their LayerNorm (the encoder's
// input norm), post-norm layers with erf GELU, no final norm; the pooler (tanh of a dense
// layer over each sequence's first token) where the checkpoint has one. A BertModel's
// names, or under "bert." with a head: BertForMaskedLM's (cls.predictions: dense, GELU,
// LayerNorm, then the decoder tied to the word embeddings and its bias) or
// BertForSequenceClassification's (a classifier on the pooled output, id2label its labels).
#include "family.hpp"
#include "hugging_face.hpp"
#include "wordpiece_tokenizer.hpp"

namespace vkf::model {

namespace {

ModelConfig read_config(const ModelFiles& files) {
  const ConfigReader r(files, "config.json");
  ModelConfig c;
  c.architecture = r.string("model_type");
  if (c.architecture != "bert") r.fail("model_type '" + c.architecture + "' is not bert");
  c.hugging_face = true;
  c.kind = ModelKind::EncoderOnly;
  c.d_model = r.count("hidden_size", 1);
  c.nhead = r.count("num_attention_heads", 1);
  if (c.d_model % c.nhead)
    r.fail("hidden_size " + std::to_string(c.d_model) + " is not divisible by num_attention_heads " + std::to_string(c.nhead));
  c.dim_feedforward = r.count("intermediate_size", 1);
  c.num_encoder_layers = r.count("num_hidden_layers", 0);
  c.num_decoder_layers = 0;
  c.src_vocab_size = r.count("vocab_size", 1);
  c.tgt_vocab_size = c.src_vocab_size;
  c.max_position = r.count("max_position_embeddings", 1);
  c.token_types = r.has("type_vocab_size") ? r.count("type_vocab_size", 1, 1u << 16) : 2;
  c.layer_norm_eps = r.has("layer_norm_eps") ? r.number("layer_norm_eps", 0, 1) : 1e-12f;
  const std::string act = r.has("hidden_act") ? r.string("hidden_act") : "gelu";
  if (act != "gelu") r.fail("field 'hidden_act' is '" + act + "': vkformer runs BERT with gelu (erf)");
  c.activation = Activation::Gelu;
  if (r.has("position_embedding_type") && r.string("position_embedding_type") != "absolute")
    r.fail("field 'position_embedding_type' is '" + r.string("position_embedding_type") +
           "': vkformer runs absolute positions only");
  if (r.has("is_decoder") && r.flag("is_decoder")) r.fail("field 'is_decoder' is true: vkformer runs BERT as an encoder");
  c.norm_first = false;
  c.positions = ModelConfig::Positions::Learned;
  c.embedding_norm = true;
  c.final_norms = false;
  c.pad_id = r.has("pad_token_id") ? r.count("pad_token_id", 0, c.src_vocab_size - 1) : 0;
  // A classifier's labels: id2label's names by id ("0", "1", ... each once).
  if (r.has("architectures") && r.json()["architectures"].is_array() && !r.json()["architectures"].empty() &&
      r.json()["architectures"][0] == "BertForSequenceClassification") {
    const auto& map = r.need("id2label");
    if (!map.is_object() || map.empty() || map.size() > 65536) r.fail("field 'id2label' must map label ids to names");
    c.labels.resize(map.size());
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
      c.labels[i] = name.get<std::string>();
    }
  }
  return c;
}

void declare_tensors(Checkpoint& t, Model::Impl& m) {
  const ModelConfig& c = m.config;
  const uint32_t D = c.d_model, F = c.dim_feedforward;
  // BertModel's own names, or under "bert." in a BertFor* checkpoint.
  const std::string p = t.has("bert.embeddings.word_embeddings.weight") ? "bert." : "";
  const std::string e = p + "embeddings.";
  t.embedding(m.src_embed, m.src_embed_blocks, e + "word_embeddings.weight", c.src_vocab_size, D);
  t.fp32_rows(m.positions, e + "position_embeddings.weight", {c.max_position, D}, 0, c.max_position);
  t.fp32_rows(m.token_types, e + "token_type_embeddings.weight", {c.token_types, D}, 0, c.token_types);
  t.norm(m.encoder_embed_norm, e + "LayerNorm", D);
  t.unread(e + "position_ids");  // a buffer older saves carry
  const std::string layers = p + "encoder.layer";
  t.layers(layers, c.num_encoder_layers, "num_hidden_layers");
  m.encoder.resize(c.num_encoder_layers);
  for (uint32_t i = 0; i < c.num_encoder_layers; ++i) {
    const std::string l = layers + "." + std::to_string(i) + ".";
    EncoderLayer& to = m.encoder[i];
    const std::string a = l + "attention.";
    t.stacked(to.self_qkv, {{a + "self.query", D}, {a + "self.key", D}, {a + "self.value", D}}, D, true);
    t.linear(to.self_out, a + "output.dense", D, D);
    t.norm(to.norm1, a + "output.LayerNorm", D);   // x = LN1(x + SelfAttn(x))
    t.linear(to.ffn.linear1, l + "intermediate.dense", F, D);
    t.linear(to.ffn.linear2, l + "output.dense", D, F);
    t.norm(to.norm2, l + "output.LayerNorm", D);   // x = LN2(x + FFN(x))
  }
  if (t.has(p + "pooler.dense.weight")) t.linear(m.pooler, p + "pooler.dense", D, D);
  const uint32_t V = c.src_vocab_size;
  if (t.has("cls.predictions.transform.dense.weight")) {  // BertForMaskedLM
    t.linear(m.mlm_transform, "cls.predictions.transform.dense", D, D);
    t.norm(m.mlm_norm, "cls.predictions.transform.LayerNorm", D);
    const ConfigReader r(t.files(), "config.json");
    const bool tied = !r.has("tie_word_embeddings") || r.flag("tie_word_embeddings");  // BertConfig's default
    const std::string decoder = "cls.predictions.decoder.weight";
    if (!tied) {
      t.linear_weight(m.mlm_decoder, decoder, V, D);
    } else {
      if (t.has(decoder)) t.unread(decoder, {V, D});  // the tied copy a file may carry
      t.tied_head(m.mlm_decoder, m.src_embed, m.src_embed_blocks, V, D);
    }
    // The decoder's bias is cls.predictions.bias (its decoder.bias the same tensor, which
    // a file carries once or twice).
    t.tensor(m.mlm_bias, "cls.predictions.bias", {V});
    if (t.has("cls.predictions.decoder.bias")) t.unread("cls.predictions.decoder.bias", {V});
  }
  if (!c.labels.empty()) {  // BertForSequenceClassification
    if (!t.has(p + "pooler.dense.weight"))
      throw Error(t.files().label() + ": a sequence classifier without " + p + "pooler.dense: its classifier reads the pooled output");
    t.linear(m.classifier, "classifier", uint32_t(c.labels.size()), D);
  }
}

std::unique_ptr<Tokenizer> make_tokenizer(const ModelFiles& files, const ConfigReader& config) {
  return WordPieceTokenizer::for_model(files, config.count("vocab_size", 1));
}

}  // namespace

const Family kBert{"bert", true, ModelTask::Encoder, read_config, hf_checkpoint, declare_tensors, make_tokenizer,
                   {"tokenizer.json", "vocab.txt"}};

}  // namespace vkf::model
