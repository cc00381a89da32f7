// A Hugging Face directory's config.json and generation_config.json, as MarianConfig,
// BartConfig and GenerationConfig define them, read into vkformer's ModelConfig. What
// would change the computation and vkformer does not do is refused by name, never
// ignored.
#include "hf_model.hpp"

#include <algorithm>
#include <filesystem>

#include "config_reader.hpp"

namespace vkf::model {

namespace {

Activation hf_activation(const ConfigReader& r) {
  const std::string a = r.string("activation_function");
  if (a == "swish" || a == "silu") return Activation::Silu;
  if (a == "gelu") return Activation::Gelu;
  if (a == "gelu_new" || a == "gelu_pytorch_tanh") return Activation::GeluTanh;
  if (a == "relu") return Activation::Relu;
  r.fail("field 'activation_function' is '" + a + "'; vkformer runs swish (silu), gelu, gelu_new and relu");
}

// A token id field: an integer, or a list of one (GenerationConfig allows lists of EOS ids).
uint32_t token_id(const ConfigReader& r, const char* key, uint32_t vocab) {
  const nlohmann::json& v = r.need(key);
  const nlohmann::json& id = v.is_array() && v.size() == 1 ? v[0] : v;
  if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() >= int64_t(vocab))
    r.fail(std::string("field '") + key + "' must be a token id below the vocabulary size " + std::to_string(vocab) +
           (v.is_array() && v.size() > 1 ? " (vkformer takes one id, not a list)" : ""));
  return id.get<uint32_t>();
}

// Generation settings, from generation_config.json (every key checked: a setting vkformer
// does not honour is refused) or, for older checkpoints without one, from config.json
// (only the generation keys are read there).
void read_generation(const ConfigReader& r, bool whole_file, ModelConfig& c) {
  GenerationDefaults& g = c.generation;
  const uint32_t V = c.tgt_vocab_size;
  if (r.has("num_beams")) g.num_beams = r.count("num_beams", 1, GenerateOptions::kMaxBeam);
  if (r.has("length_penalty")) g.length_penalty = r.number("length_penalty", -10, 10);
  if (r.has("early_stopping")) {
    const auto& v = r.json()["early_stopping"];
    if (v.is_boolean())
      g.early_stopping = v.get<bool>() ? 1 : 0;
    else if (v == "never")
      g.early_stopping = -1;
    else
      r.fail("field 'early_stopping' must be true, false or \"never\"");
  }
  if (r.has("max_length")) g.max_length = r.count("max_length", 1, c.max_position + 1);
  if (r.has("min_length")) g.min_length = r.count("min_length", 0, c.max_position + 1);
  if (r.has("no_repeat_ngram_size")) g.no_repeat_ngram_size = r.count("no_repeat_ngram_size", 0, 1024);
  if (r.has("repetition_penalty"))
    g.repetition_penalty = r.number("repetition_penalty", 1e-6, GenerateOptions::kMaxRepetitionPenalty);
  if (r.has("bad_words_ids")) {
    const auto& v = r.json()["bad_words_ids"];
    auto bad = [&] { r.fail("field 'bad_words_ids' must be a list of non-empty lists of token ids below " + std::to_string(V)); };
    if (!v.is_array()) bad();
    for (const auto& seq : v) {
      if (!seq.is_array() || seq.empty()) bad();
      std::vector<uint32_t> ids;
      for (const auto& id : seq) {
        if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() >= int64_t(V)) bad();
        ids.push_back(id.get<uint32_t>());
      }
      g.bad_words_ids.push_back(std::move(ids));
    }
  }
  if (r.has("forced_bos_token_id")) g.forced_bos_id = token_id(r, "forced_bos_token_id", V);
  if (r.has("forced_eos_token_id")) g.forced_eos_id = token_id(r, "forced_eos_token_id", V);
  // (A decoder-only model may name an EOS outside its vocabulary, as a small random GPT-2
  // keeps 50256: it is then never produced, as in transformers.)
  if (r.has("eos_token_id") && token_id(r, "eos_token_id", c.decoder_only ? UINT32_MAX : V) != c.eos_id)
    r.fail("field 'eos_token_id' differs from config.json's");
  if (r.has("decoder_start_token_id") && token_id(r, "decoder_start_token_id", V) != c.bos_id)
    r.fail("field 'decoder_start_token_id' differs from config.json's");
  if (!whole_file) return;
  // Everything else in generation_config.json must be bookkeeping or leave generate() as
  // it is: a sampling or penalty setting vkformer would silently drop is an error.
  static const char* const kHonoured[] = {"num_beams", "length_penalty", "early_stopping", "max_length", "min_length",
                                          "no_repeat_ngram_size", "bad_words_ids", "forced_bos_token_id",
                                          "forced_eos_token_id", "eos_token_id", "decoder_start_token_id",
                                          "bos_token_id", "pad_token_id", "_from_model_config", "transformers_version",
                                          "use_cache", "return_dict_in_generate", "output_scores", "repetition_penalty",
                                          "output_attentions", "output_hidden_states"};
  for (const auto& [key, value] : r.json().items()) {
    if (std::find(std::begin(kHonoured), std::end(kHonoured), key) != std::end(kHonoured)) continue;
    const bool neutral = value.is_null() || value == false || (key == "num_return_sequences" && value == 1) ||
                         (key == "num_beam_groups" && value == 1) ||
                         (key == "diversity_penalty" && value == 0.0) ||
                         // sampling settings are inert while do_sample is false
                         ((key == "temperature" || key == "top_k" || key == "top_p") && r.json().value("do_sample", false) != true);
    if (!neutral)
      r.fail("generation setting '" + key + "' is not supported by vkformer (it honours num_beams, length_penalty, "
             "early_stopping, max_length, min_length, no_repeat_ngram_size, bad_words_ids, forced_bos_token_id, "
             "forced_eos_token_id)");
  }
}

}  // namespace

void read_hf_generation(const std::string& directory, ModelConfig& c) {
  namespace fs = std::filesystem;
  const fs::path gen = fs::path(directory) / "generation_config.json";
  std::error_code ec;
  if (fs::exists(gen, ec))
    read_generation(ConfigReader(gen.string()), true, c);
  else
    read_generation(ConfigReader((fs::path(directory) / "config.json").string()), false, c);
}

ModelConfig read_hf_config(const std::string& directory) {
  namespace fs = std::filesystem;
  const ConfigReader r((fs::path(directory) / "config.json").string());
  ModelConfig c;
  c.architecture = r.string("model_type");
  if (c.architecture != "marian" && c.architecture != "bart")
    r.fail("model_type '" + c.architecture + "' is not supported (vkformer runs Hugging Face model_type marian, bart and gpt2)");
  c.hugging_face = true;
  c.d_model = r.count("d_model", 1);
  c.nhead = r.count("encoder_attention_heads", 1);
  if (r.count("decoder_attention_heads", 1) != c.nhead)
    r.fail("decoder_attention_heads differs from encoder_attention_heads; vkformer runs one head count");
  c.dim_feedforward = r.count("encoder_ffn_dim", 1);
  if (r.count("decoder_ffn_dim", 1) != c.dim_feedforward)
    r.fail("decoder_ffn_dim differs from encoder_ffn_dim; vkformer runs one feed-forward width");
  if (c.d_model % c.nhead)
    r.fail("d_model " + std::to_string(c.d_model) + " is not divisible by encoder_attention_heads " + std::to_string(c.nhead));
  if (c.head_dim() > Ops::kMaxFusedHeadDim)
    r.fail("head_dim " + std::to_string(c.head_dim()) + " is larger than the " + std::to_string(Ops::kMaxFusedHeadDim) +
           " vkformer's attention kernel supports");
  c.num_encoder_layers = r.count("encoder_layers", 0);
  c.num_decoder_layers = r.count("decoder_layers", 0);
  c.activation = hf_activation(r);
  c.layer_norm_eps = 1e-5f;  // nn.LayerNorm's default, which both models use
  c.norm_first = false;
  for (const char* key : {"normalize_before", "add_final_layer_norm"})
    if (r.has(key) && r.flag(key)) r.fail(std::string("field '") + key + "' is true: that is mBART's pre-norm layout, which vkformer does not run");
  c.src_vocab_size = r.count("vocab_size", 1);
  c.tgt_vocab_size = c.architecture == "marian" && r.has("decoder_vocab_size") ? r.count("decoder_vocab_size", 1) : c.src_vocab_size;
  c.max_position = r.count("max_position_embeddings", 1, 1u << 16);
  if (uint64_t(c.max_position) * c.d_model > (1ull << 26)) r.fail("max_position_embeddings x d_model is more than 2^26");
  c.scale_embedding = r.has("scale_embedding") && r.flag("scale_embedding");
  c.pad_id = token_id(r, "pad_token_id", c.src_vocab_size);
  c.eos_id = token_id(r, "eos_token_id", c.tgt_vocab_size);
  c.bos_id = token_id(r, "decoder_start_token_id", c.tgt_vocab_size);
  if (c.architecture == "marian") {
    c.positions = ModelConfig::Positions::Halves;
  } else {
    c.positions = ModelConfig::Positions::Learned;
    c.embedding_norm = true;
    if (r.has("normalize_embedding") && !r.flag("normalize_embedding"))
      r.fail("field 'normalize_embedding' is false; vkformer runs BART with its layernorm_embedding");
  }
  c.final_norms = false;
  read_hf_generation(directory, c);
  return c;
}

}  // namespace vkf::model
