// GPT-2, as transformers' GPT2LMHeadModel computes it (modeling_gpt2.py), mapped onto
// vkformer's decoder stack: learned positions, pre-norm blocks (ln_1, causal
// self-attention, ln_2, an MLP with gelu_new), the final ln_f, and the output
// projection tied to the token embedding. Conv1D layers store their weights [in, out]:
// they are transposed once at load into Linear's [out, in]; c_attn's fused q, k, v
// projection is already the one [3D, D] projection vkformer's self-attention takes.
#include <filesystem>

#include "config_reader.hpp"
#include "expected_tensors.hpp"
#include "family.hpp"
#include "hugging_face.hpp"
#include "uploader.hpp"
#include "vkformer/tensor_io.hpp"

namespace vkf::model {

namespace {

// config.json (model_type "gpt2"): errors name the file and the field; settings that
// would change the computation and vkformer does not run are refused by name.
ModelConfig read_gpt2_config(const ModelFiles& files) {
  namespace fs = std::filesystem;
  const ConfigReader r(files, "config.json");
  ModelConfig c;
  c.architecture = r.string("model_type");
  if (c.architecture != "gpt2") r.fail("model_type '" + c.architecture + "' is not gpt2");
  c.hugging_face = true;
  c.decoder_only = true;
  c.d_model = r.count("n_embd", 1);
  c.nhead = r.count("n_head", 1);
  if (c.d_model % c.nhead)
    r.fail("n_embd " + std::to_string(c.d_model) + " is not divisible by n_head " + std::to_string(c.nhead));
  if (c.head_dim() > Ops::kMaxFusedHeadDim)
    r.fail("head_dim " + std::to_string(c.head_dim()) + " is larger than the " + std::to_string(Ops::kMaxFusedHeadDim) +
           " vkformer's attention kernels support");
  c.dim_feedforward = r.has("n_inner") ? r.count("n_inner", 1) : 4 * c.d_model;  // null: 4 x n_embd
  c.num_encoder_layers = 0;
  c.num_decoder_layers = r.count("n_layer", 0);
  const std::string act = r.has("activation_function") ? r.string("activation_function") : "gelu_new";
  if (act == "gelu_new" || act == "gelu_pytorch_tanh") c.activation = Activation::GeluTanh;
  else if (act == "gelu") c.activation = Activation::Gelu;
  else if (act == "relu") c.activation = Activation::Relu;
  else if (act == "silu" || act == "swish") c.activation = Activation::Silu;
  else r.fail("field 'activation_function' is '" + act + "'; vkformer runs gelu_new, gelu_pytorch_tanh, gelu, relu and silu");
  c.layer_norm_eps = r.has("layer_norm_epsilon") ? r.number("layer_norm_epsilon", 0, 1) : 1e-5f;
  c.norm_first = true;
  c.tgt_vocab_size = r.count("vocab_size", 1);
  c.src_vocab_size = c.tgt_vocab_size;
  c.max_position = r.count("n_positions", 1, 1u << 16);
  if (uint64_t(c.max_position) * c.d_model > (1ull << 26)) r.fail("n_positions x n_embd is more than 2^26");
  // What would change the computation, refused by name rather than ignored.
  if (r.has("scale_attn_weights") && !r.flag("scale_attn_weights"))
    r.fail("field 'scale_attn_weights' is false (attention without 1/sqrt(head_dim)), which vkformer does not run");
  if (r.has("scale_attn_by_inverse_layer_idx") && r.flag("scale_attn_by_inverse_layer_idx"))
    r.fail("field 'scale_attn_by_inverse_layer_idx' is true, which vkformer does not run");
  if (r.has("add_cross_attention") && r.flag("add_cross_attention"))
    r.fail("field 'add_cross_attention' is true: a GPT-2 with cross-attention is an encoder-decoder's decoder, which vkformer does not run");
  // Token ids: GPT-2's <|endoftext|> (50256) is BOS and EOS; a random model with a smaller
  // vocabulary keeps the default and then never produces it, as transformers does.
  auto id = [&](const char* key, uint32_t fallback) -> uint32_t {
    if (!r.has(key)) return fallback;
    const auto& v = r.json()[key];
    const auto& one = v.is_array() && v.size() == 1 ? v[0] : v;
    if (!one.is_number_integer() || one.get<int64_t>() < 0 || one.get<int64_t>() > int64_t(UINT32_MAX))
      r.fail(std::string("field '") + key + "' must be one token id");
    return one.get<uint32_t>();
  };
  c.bos_id = id("bos_token_id", 50256);
  c.eos_id = id("eos_token_id", 50256);
  c.pad_id = c.eos_id;
  c.positions = ModelConfig::Positions::Learned;
  c.final_norms = true;  // ln_f
  // generation_config.json as for the encoder-decoders: repetition_penalty honoured, a
  // setting vkformer would drop (do_sample, ...) refused by name. Its max_length counts
  // the prompt, so the default number of new tokens stays vkformer's.
  read_hf_generation(files, c);
  return c;
}

namespace {

// Tensor names with or without the "transformer." prefix (GPT2LMHeadModel writes it,
// GPT2Model does not).
struct Names {
  std::string prefix;
  std::string operator()(const std::string& n) const { return prefix + n; }
};

Names names_of(const SafeTensors& f) {
  return {f.tensors().count("transformer.wte.weight") ? "transformer." : ""};
}

void conv1d(ExpectedTensors& t, const std::string& p, uint64_t in, uint64_t out) {
  t.add(p + ".weight", {in, out});
  t.add(p + ".bias", {out});
}

}  // namespace

std::unique_ptr<Model::Impl> load_gpt2_weights(Context& ctx, const ModelFiles& files, const ModelConfig& c,
                                               DType precision) {
  SafeTensors file(files, hf_checkpoint(files));
  const Names n = names_of(file);
  const uint64_t D = c.d_model, F = c.dim_feedforward, V = c.tgt_vocab_size;
  check_layer_count(file, files.label(), n("h"), c.num_decoder_layers, "n_layer");
  // Every tensor by name and shape; the attention-mask buffers older files carry
  // (attn.bias, attn.masked_bias) are ignored, and lm_head.weight is the tied embedding
  // unless config.json unties it.
  const bool tied = !ConfigReader(files, "config.json").has("tie_word_embeddings") ||
                    ConfigReader(files, "config.json").flag("tie_word_embeddings");
  ExpectedTensors t;
  t.add(n("wte.weight"), {V, D});
  t.add(n("wpe.weight"), {c.max_position, D});
  t.norm(n("ln_f"), D);
  const bool has_head = file.tensors().count("lm_head.weight") > 0;
  if (has_head || !tied) t.add("lm_head.weight", {V, D});
  for (uint32_t i = 0; i < c.num_decoder_layers; ++i) {
    const std::string p = n("h." + std::to_string(i));
    t.norm(p + ".ln_1", D);
    conv1d(t, p + ".attn.c_attn", D, 3 * D);
    conv1d(t, p + ".attn.c_proj", D, D);
    t.norm(p + ".ln_2", D);
    conv1d(t, p + ".mlp.c_fc", D, F);
    conv1d(t, p + ".mlp.c_proj", F, D);
    for (const char* buffer : {".attn.bias", ".attn.masked_bias"})
      if (const auto it = file.tensors().find(p + buffer); it != file.tensors().end()) t.add(p + buffer, it->second.shape);
  }
  t.check(file, files.label(), "gpt2");

  auto m = std::make_unique<Model::Impl>(Model::Impl{.ctx = ctx, .config = c, .dtype = precision});
  Uploader up(ctx, file, precision);
  m->tgt_embed = up.tensor(n("wte.weight"));
  m->src_embed = m->tgt_embed;
  m->tgt_positions = up.fp32_rows(n("wpe.weight"), 0, c.max_position);
  m->positions = m->tgt_positions;
  for (uint32_t i = 0; i < c.num_decoder_layers; ++i) {
    const std::string p = n("h." + std::to_string(i));
    DecoderLayer l;  // no cross-attention: cross_q, cross_kv and cross_out stay empty
    l.self_qkv = up.conv1d(p + ".attn.c_attn");
    l.self_out = up.conv1d(p + ".attn.c_proj");
    l.ffn = {up.conv1d(p + ".mlp.c_fc"), up.conv1d(p + ".mlp.c_proj")};
    l.norm1 = up.norm(p + ".ln_1");  // before self-attention
    l.norm3 = up.norm(p + ".ln_2");  // before the MLP (norm2 belongs to cross-attention)
    m->decoder.push_back(std::move(l));
  }
  m->decoder_norm = up.norm(n("ln_f"));
  const std::vector<float> zeros(V, 0.0f);  // lm_head has no bias
  m->generator = {.weight = tied ? m->tgt_embed : up.tensor("lm_head.weight"),
                  .bias = upload_floats(ctx, zeros, precision, "lm_head.bias"), .out = uint32_t(V), .in = uint32_t(D)};
  return m;
}

}  // namespace

const Family kGpt2{"gpt2", true, read_gpt2_config, load_gpt2_weights};

}  // namespace vkf::model
