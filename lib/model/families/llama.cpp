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

#include "config_reader.hpp"
#include "expected_tensors.hpp"
#include "family.hpp"
#include "hugging_face.hpp"
#include "uploader.hpp"
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
  c.decoder_only = true;
  c.d_model = r.count("hidden_size", 1);
  c.nhead = r.count("num_attention_heads", 1);
  if (c.d_model % c.nhead)
    r.fail("hidden_size " + std::to_string(c.d_model) + " is not divisible by num_attention_heads " + std::to_string(c.nhead));
  if (r.has("head_dim") && r.count("head_dim", 1) != c.head_dim())
    r.fail("field 'head_dim' differs from hidden_size / num_attention_heads, which vkformer does not run");
  if (c.head_dim() > Ops::kMaxFusedHeadDim)
    r.fail("head_dim " + std::to_string(c.head_dim()) + " is larger than the " + std::to_string(Ops::kMaxFusedHeadDim) +
           " vkformer's attention kernels support");
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
  c.rms_norm = true;
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
  c.pad_id = r.has("pad_token_id") ? id("pad_token_id", c.eos_id) : c.eos_id;
  read_hf_generation(files, c);
  return c;
}

std::unique_ptr<Model::Impl> load_llama_weights(Context& ctx, const ModelFiles& files, const ModelConfig& c,
                                                DType precision) {
  SafeTensors file(files, hf_checkpoint(files));
  const uint64_t D = c.d_model, F = c.dim_feedforward, V = c.tgt_vocab_size, KV = uint64_t(c.kv_head_count()) * c.head_dim();
  check_layer_count(file, files.label(), "model.layers", c.num_decoder_layers, "num_hidden_layers");
  const ConfigReader r(files, "config.json");
  const bool tied = r.has("tie_word_embeddings") && r.flag("tie_word_embeddings");  // LlamaConfig's default: false
  ExpectedTensors t;
  t.add("model.embed_tokens.weight", {V, D});
  t.add("model.norm.weight", {D});
  const bool has_head = file.tensors().count("lm_head.weight") > 0;
  const bool qkv_bias = c.architecture == "qwen2";  // Qwen2's only biases
  if (has_head || !tied) t.add("lm_head.weight", {V, D});
  for (uint32_t i = 0; i < c.num_decoder_layers; ++i) {
    const std::string p = "model.layers." + std::to_string(i);
    t.add(p + ".self_attn.q_proj.weight", {D, D});
    t.add(p + ".self_attn.k_proj.weight", {KV, D});
    t.add(p + ".self_attn.v_proj.weight", {KV, D});
    if (qkv_bias) {
      t.add(p + ".self_attn.q_proj.bias", {D});
      t.add(p + ".self_attn.k_proj.bias", {KV});
      t.add(p + ".self_attn.v_proj.bias", {KV});
    }
    t.add(p + ".self_attn.o_proj.weight", {D, D});
    t.add(p + ".mlp.gate_proj.weight", {F, D});
    t.add(p + ".mlp.up_proj.weight", {F, D});
    t.add(p + ".mlp.down_proj.weight", {D, F});
    t.add(p + ".input_layernorm.weight", {D});
    t.add(p + ".post_attention_layernorm.weight", {D});
    // Older files carry the rotary frequencies as a buffer: recomputed from config.json.
    if (const auto it = file.tensors().find(p + ".self_attn.rotary_emb.inv_freq"); it != file.tensors().end())
      t.add(it->first, it->second.shape);
  }
  t.check(file, files.label(), c.architecture);

  auto m = std::make_unique<Model::Impl>(Model::Impl{.ctx = ctx, .config = c, .dtype = precision});
  Uploader up(ctx, file, precision);
  auto zeros = [&](uint64_t n, const std::string& name) {
    return upload_floats(ctx, std::vector<float>(n, 0.0f), precision, name);  // Llama has no biases
  };
  auto linear = [&](const std::vector<std::string>& names) {
    uint64_t out = 0;
    for (const auto& n : names) out += file.at(n).shape[0];
    return Linear{.weight = names.size() == 1 ? up.tensor(names[0]) : up.stacked(names),
                  .bias = zeros(out, names[0] + ".bias"), .out = uint32_t(out),
                  .in = uint32_t(file.at(names[0]).shape[1])};
  };
  auto rms = [&](const std::string& name) {
    // An RMSNorm has no beta: the norm kernel reads gamma's view only; a GEMM that folds
    // it adds a beta as a LayerNorm's, so it gets zeros.
    return Norm{up.tensor(name), zeros(c.d_model, name + ".beta")};
  };
  m->tgt_embed = up.tensor("model.embed_tokens.weight");
  m->src_embed = m->tgt_embed;
  for (uint32_t i = 0; i < c.num_decoder_layers; ++i) {
    const std::string p = "model.layers." + std::to_string(i);
    DecoderLayer l;  // no cross-attention: cross_q, cross_kv and cross_out stay empty
    const std::string q = p + ".self_attn.q_proj", k = p + ".self_attn.k_proj", v = p + ".self_attn.v_proj";
    l.self_qkv = qkv_bias ? up.stacked_linear({q, k, v}) : linear({q + ".weight", k + ".weight", v + ".weight"});
    l.self_out = linear({p + ".self_attn.o_proj.weight"});
    l.ffn = {linear({p + ".mlp.gate_proj.weight", p + ".mlp.up_proj.weight"}), linear({p + ".mlp.down_proj.weight"})};
    l.norm1 = rms(p + ".input_layernorm.weight");           // before self-attention
    l.norm3 = rms(p + ".post_attention_layernorm.weight");  // before the MLP
    m->decoder.push_back(std::move(l));
  }
  m->decoder_norm = rms("model.norm.weight");
  m->generator = {.weight = tied && !has_head ? m->tgt_embed : up.tensor("lm_head.weight"),
                  .bias = zeros(V, "lm_head.bias"), .out = uint32_t(V), .in = uint32_t(D)};
  const auto table = rotary_positions(c.max_position, c.rope_inv_freq, c.rope_position_scale);
  m->rope_table = upload_floats(ctx, table, DType::F32, "rope_table");  // [max_position, d / 2, 2]
  return m;
}

}  // namespace

const Family kLlama{"llama", true, read_llama_config, load_llama_weights};
const Family kMistral{"mistral", true, read_llama_config, load_llama_weights};
const Family kQwen2{"qwen2", true, read_llama_config, load_llama_weights};

}  // namespace vkf::model
