// The Llama family (transformers' LlamaForCausalLM, model_type "llama", Mistral's
// "mistral", the same computation, and Qwen2's "qwen2", the same with biases on the
// query, key and value projections) mapped onto vkformer's decoder stack: RMSNorm before
// each block and at the end, rotary positions on queries and keys (rotate-half, rope_theta,
// rope_scaling linear or llama3), grouped-query attention, a gated SiLU MLP (SwiGLU; gate
// and up stacked into one projection), no biases, the output projection tied to the
// embedding or not. What would change the computation and vkformer does not run is
// refused by name.
#include <cmath>
#include <filesystem>

#include "bart_tokenizer.hpp"
#include "family.hpp"
#include "hugging_face.hpp"
#include "llama_tokenizer.hpp"
#include "vkformer/tensor_io.hpp"

namespace vkf::model {

namespace {

// The rotary frequencies as transformers computes them, in fp32: 1 / theta^(2j / d), then
// rope_scaling's rule (llama3: per frequency band, as _compute_llama3_parameters does;
// linear: positions divided by the factor, which rotary_positions takes).
void read_rope(const ConfigReader& r, ModelConfig& c) {
  const uint32_t d = c.head_dim();
  if (d % 2) r.fail("head_dim " + std::to_string(d) + " is odd: rotary positions rotate pairs");
  const double theta = r.has("rope_theta") ? r.number("rope_theta", 1, 1e12) : 10000.0;
  c.rope_theta = theta;
  c.rope_inv_freq.resize(d / 2);
  for (uint32_t j = 0; j < d / 2; ++j) {
    const float exponent = float(2 * j) / float(d);
    c.rope_inv_freq[j] = 1.0f / float(std::pow(double(float(theta)), double(exponent)));
  }
  // A factor per frequency (a GGUF file's rope_freqs, Llama 3.1's llama3 rule as llama.cpp's
  // converter stores it): each frequency divided by its factor.
  if (r.has("rope_freq_factors")) {
    const nlohmann::json& f = r.json()["rope_freq_factors"];
    if (!f.is_array() || f.size() != d / 2) r.fail("field 'rope_freq_factors' must be " + std::to_string(d / 2) + " numbers");
    if (r.has("rope_scaling")) r.fail("fields 'rope_freq_factors' and 'rope_scaling' are both given");
    for (uint32_t j = 0; j < d / 2; ++j) {
      if (!f[j].is_number() || !(f[j].get<double>() > 0)) r.fail("field 'rope_freq_factors' holds a factor that is not positive");
      c.rope_inv_freq[j] = c.rope_inv_freq[j] / float(f[j].get<double>());
    }
    c.rope_scaling = "llama3";
    return;
  }
  if (!r.has("rope_scaling")) return;
  const nlohmann::json& s = r.json()["rope_scaling"];
  if (!s.is_object()) r.fail("field 'rope_scaling' must be null or an object");
  const nlohmann::json& named = s.contains("rope_type") ? s["rope_type"] : s.contains("type") ? s["type"] : nlohmann::json();
  if (!named.is_null() && !named.is_string()) r.fail("rope_scaling's 'rope_type' (or 'type') must be a string");
  const std::string type = named.is_string() ? named.get<std::string>() : std::string();
  auto number = [&](const char* key) {
    if (!s.contains(key) || !s[key].is_number() || !(s[key].get<double>() > 0))
      r.fail(std::string("rope_scaling needs a positive '") + key + "'");
    return s[key].get<double>();
  };
  c.rope_scaling = type == "default" ? "" : type;
  if (type == "linear") {
    c.rope_position_scale = float(number("factor"));
  } else if (type == "llama3") {
    const float factor = float(number("factor")), low = float(number("low_freq_factor")),
                high = float(number("high_freq_factor")), old_len = float(number("original_max_position_embeddings"));
    if (!(high > low)) r.fail("rope_scaling: high_freq_factor must be larger than low_freq_factor");
    const float low_wavelen = old_len / low, high_wavelen = old_len / high;
    for (float& f : c.rope_inv_freq) {
      const float wavelen = float(2 * M_PI) / f;
      const float scaled = wavelen > low_wavelen ? f / factor : f;
      const float smooth = (old_len / wavelen - low) / (high - low);
      const bool medium = !(wavelen < high_wavelen) && !(wavelen > low_wavelen);
      f = medium ? (1 - smooth) * scaled / factor + smooth * scaled : scaled;
    }
  } else if (type != "default") {
    r.fail("rope_scaling type '" + type + "' is not supported (vkformer runs linear and llama3)");
  }
}

ModelConfig read_llama_config(const ModelFiles& files) {
  namespace fs = std::filesystem;
  const ConfigReader r(files, "config.json");
  ModelConfig c;
  c.architecture = r.string("model_type");
  if (c.architecture != "llama" && c.architecture != "mistral" && c.architecture != "qwen2")
    r.fail("model_type '" + c.architecture + "' is not llama, mistral or qwen2");
  c.hugging_face = true;
  c.kind = ModelKind::DecoderOnly;
  c.d_model = r.count("hidden_size", 1);
  c.nhead = r.count("num_attention_heads", 1);
  // Each head's width: head_dim where config.json sets it (Mistral NeMo's 128 on 5120 over
  // 32 heads), else hidden_size / num_attention_heads as transformers takes it.
  if (r.has("head_dim"))
    c.head_width = r.count("head_dim", 1, 1u << 16);
  else if (c.d_model % c.nhead)
    r.fail("hidden_size " + std::to_string(c.d_model) + " is not divisible by num_attention_heads " + std::to_string(c.nhead));
  c.kv_heads = r.has("num_key_value_heads") ? r.count("num_key_value_heads", 1) : c.nhead;
  if (c.nhead % c.kv_heads)
    r.fail("num_key_value_heads " + std::to_string(c.kv_heads) + " does not divide num_attention_heads " +
           std::to_string(c.nhead));
  c.dim_feedforward = r.count("intermediate_size", 1);
  c.num_encoder_layers = 0;
  c.num_decoder_layers = r.count("num_hidden_layers", 0);
  const std::string act = r.has("hidden_act") ? r.string("hidden_act") : "silu";
  if (act != "silu" && act != "swish") r.fail("field 'hidden_act' is '" + act + "'; vkformer runs Llama's silu");
  c.activation = Activation::Silu;
  c.gated_ffn = true;
  c.norm_kind = NormKind::RMSNorm;
  c.norm_first = true;
  c.final_norms = true;  // model.norm
  c.layer_norm_eps = r.has("rms_norm_eps") ? r.number("rms_norm_eps", 0, 1) : 1e-6f;
  c.tgt_vocab_size = r.count("vocab_size", 1);
  c.src_vocab_size = c.tgt_vocab_size;
  c.max_position = r.count("max_position_embeddings", 1, 1u << 20);
  if (uint64_t(c.max_position) * c.head_dim() / 2 > (1ull << 26))
    r.fail("max_position_embeddings x head_dim / 2 is more than 2^26 (the rotary table)");
  for (const char* key : {"attention_bias", "mlp_bias"})
    if (r.has(key) && r.flag(key)) r.fail(std::string("field '") + key + "' is true: Llama with biases is not supported");
  // Mistral's sliding window: attention over the last sliding_window keys only. Runs that
  // stay inside it compute the same as full attention, so the window bounds the positions
  // a run may use (a longer one is refused, naming it), never a silent difference.
  // Qwen2's applies only with use_sliding_window (its default: off), and then only to the
  // layers from max_window_layers on: bounding every run by it is the safe reading.
  const bool window_applies = c.architecture != "qwen2" || (r.has("use_sliding_window") && r.flag("use_sliding_window"));
  if (window_applies && r.has("sliding_window") && !r.json()["sliding_window"].is_null()) {
    const uint32_t window = r.count("sliding_window", 1);
    if (window < c.max_position) c.max_position = window;
  }
  c.positions = ModelConfig::Positions::Rotary;
  read_rope(r, c);
  auto id = [&](const char* key, uint32_t fallback) -> uint32_t {
    if (!r.has(key)) return fallback;
    const auto& v = r.json()[key];
    const auto& one = v.is_array() && v.size() >= 1 ? v[0] : v;  // Llama 3 lists several EOS ids: the first
    if (!one.is_number_integer() || one.get<int64_t>() < 0 || one.get<int64_t>() > int64_t(UINT32_MAX))
      r.fail(std::string("field '") + key + "' must be a token id");
    return one.get<uint32_t>();
  };
  c.bos_id = id("bos_token_id", 1);
  c.eos_id = id("eos_token_id", 2);
  // (a list of eos_token_id: the rest end an output too, read with the generation settings)
  c.pad_id = r.has("pad_token_id") ? id("pad_token_id", c.eos_id) : c.eos_id;
  read_hf_generation(files, c);
  return c;
}

void declare_tensors(Checkpoint& t, Model::Impl& m) {
  const ModelConfig& c = m.config;
  const uint32_t D = c.d_model, F = c.dim_feedforward, V = c.tgt_vocab_size, KV = c.kv_head_count() * c.head_dim();
  const uint32_t W = c.attention_width();  // the queries' width, and each head's output side by side
  const std::string layers = "model.layers";
  t.layers(layers, c.num_decoder_layers, "num_hidden_layers");
  const bool qkv_bias = c.architecture == "qwen2";  // Qwen2's only biases; Llama has none (zeros)
  const std::string embedding = "model.embed_tokens.weight";
  t.embedding(m.tgt_embed, m.tgt_embed_blocks, embedding, V, D);
  m.decoder.resize(c.num_decoder_layers);
  for (uint32_t i = 0; i < c.num_decoder_layers; ++i) {
    const std::string p = layers + "." + std::to_string(i);
    DecoderLayer& l = m.decoder[i];  // no cross-attention: cross_q, cross_kv and cross_out stay empty
    t.rms_norm(l.norm1, p + ".input_layernorm.weight", D);  // before self-attention
    const std::string a = p + ".self_attn";
    t.stacked(l.self_qkv, {{a + ".q_proj", W}, {a + ".k_proj", KV}, {a + ".v_proj", KV}}, D, qkv_bias);
    t.linear_weight(l.self_out, a + ".o_proj.weight", D, W);
    t.rms_norm(l.norm3, p + ".post_attention_layernorm.weight", D);  // before the MLP
    t.stacked(l.ffn.linear1, {{p + ".mlp.gate_proj", F}, {p + ".mlp.up_proj", F}}, D, false);
    t.linear_weight(l.ffn.linear2, p + ".mlp.down_proj.weight", D, F);
    t.unread(a + ".rotary_emb.inv_freq");  // older files' rotary frequencies: recomputed from config.json
  }
  t.rms_norm(m.decoder_norm, "model.norm.weight", D);
  // The output projection: its own, or the token embedding where config.json ties them
  // (LlamaConfig's default: not tied) and the file has none.
  const ConfigReader r(t.files(), "config.json");
  const bool tied = r.has("tie_word_embeddings") && r.flag("tie_word_embeddings");
  const std::string head = "lm_head.weight";
  const bool own_head = t.has(head) || !tied;
  if (own_head) t.linear_weight(m.generator, head, V, D);
  else t.tied_head(m.generator, m.tgt_embed, m.tgt_embed_blocks, V, D);
  t.then([&m] {
    m.src_embed = m.tgt_embed;
    m.src_embed_blocks = m.tgt_embed_blocks;
    const ModelConfig& c = m.config;
    const auto table = rotary_positions(c.max_position, c.rope_inv_freq, c.rope_position_scale);
    m.rope_table = upload_floats(m.ctx, table, DType::F32, "rope_table");  // [max_position, d / 2, 2]
  });
}

// Llama 2 and TinyLlama ship tokenizer.model (SentencePiece BPE with byte fallback)
// beside a tokenizer.json converted from it: the model itself is read, through
// libsentencepiece. Llama 3, SmolLM and Qwen2 ship tokenizer.json alone (byte-level BPE).
std::unique_ptr<Tokenizer> make_tokenizer(const ModelFiles& files, const ConfigReader& config) {
  if (files.has("tokenizer.model")) return std::make_unique<LlamaTokenizer>(files, config.count("vocab_size", 1));
  if (files.has("tokenizer.json")) return BartTokenizer::from_tokenizer_json(files, config.count("vocab_size", 1));
  throw Error("model " + files.label() + " has no tokenizer (tokenizer.model, SentencePiece's, or tokenizer.json): "
              "give token ids instead", ErrorKind::NotFound);
}

}  // namespace

const Family kLlama{"llama", true, ModelTask::Generator, read_llama_config, hf_checkpoint, declare_tensors,
                    make_tokenizer, {"tokenizer.model", "tokenizer.json"}};
const Family kMistral{"mistral", true, ModelTask::Generator, read_llama_config, hf_checkpoint, declare_tensors,
                      make_tokenizer, {"tokenizer.model", "tokenizer.json"}};
const Family kQwen2{"qwen2", true, ModelTask::Generator, read_llama_config, hf_checkpoint, declare_tensors,
                    make_tokenizer, {"tokenizer.model", "tokenizer.json"}};

}  // namespace vkf::model
