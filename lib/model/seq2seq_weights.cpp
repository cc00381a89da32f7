// Loading a torch-seq2seq directory: every tensor is checked against the config before
// anything reaches the GPU, then uploaded in the chosen precision.
#include <filesystem>

#include "config_reader.hpp"
#include "expected_tensors.hpp"
#include "gpt2.hpp"
#include "hf_model.hpp"
#include "seq2seq.hpp"
#include "uploader.hpp"

namespace vkf {

namespace {

// Every tensor name the config implies, with its shape.
model::ExpectedTensors expected_tensors(const ModelConfig& c) {
  const uint64_t D = c.d_model, F = c.dim_feedforward;
  model::ExpectedTensors t;
  t.add("src_embed.weight", {c.src_vocab_size, D});
  t.add("tgt_embed.weight", {c.tgt_vocab_size, D});
  t.linear("generator", c.tgt_vocab_size, D);
  t.norm("transformer.encoder.norm", D);
  t.norm("transformer.decoder.norm", D);
  for (uint32_t i = 0; i < c.num_encoder_layers; ++i)
    t.encoder_layer("transformer.encoder.layers." + std::to_string(i), D, F);
  for (uint32_t i = 0; i < c.num_decoder_layers; ++i) {
    const std::string p = "transformer.decoder.layers." + std::to_string(i);
    t.attention(p + ".self_attn", D);
    t.attention(p + ".multihead_attn", D);
    t.linear(p + ".linear1", F, D);
    t.linear(p + ".linear2", D, F);
    for (const char* n : {".norm1", ".norm2", ".norm3"}) t.norm(p + n, D);
  }
  return t;
}

}  // namespace

Model::Model(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Model::~Model() = default;
const ModelConfig& Model::config() const { return impl_->config; }
DType Model::precision() const { return impl_->dtype; }

std::shared_ptr<const Model> Model::load(Context& ctx, const std::string& directory, DType precision) {
  namespace fs = std::filesystem;
  // A clear error for a missing directory, a file, no config.json; then the family.
  model_architecture(directory);
  // A Hugging Face directory names its model_type instead (read_hf_config names the ones it runs).
  const model::ConfigReader config((fs::path(directory) / "config.json").string());
  const bool hugging_face = !config.has("architecture");
  const bool gpt2 = hugging_face && config.has("model_type") && config.string("model_type") == "gpt2";
  ModelConfig c = gpt2           ? model::read_gpt2_config(directory)
                  : hugging_face ? model::read_hf_config(directory)
                                 : ModelConfig::from_file((fs::path(directory) / "config.json").string());
  if (precision == DType::F16 && !ctx.capabilities().storage_16bit)
    throw Error("fp16 precision needs 16-bit storage, which device '" + ctx.capabilities().name + "' lacks");
  if (!Ops(ctx, precision).fused_attention_fits(c.head_dim()))
    throw Error("model " + directory + ": head_dim " + std::to_string(c.head_dim()) +
                " does not fit vkformer's attention kernel on device '" + ctx.capabilities().name + "'");
  if (gpt2) return std::shared_ptr<const Model>(new Model(model::load_gpt2_weights(ctx, directory, c, precision)));
  if (hugging_face) return std::shared_ptr<const Model>(new Model(model::load_hf_weights(ctx, directory, c, precision)));

  model::SafeTensors file((fs::path(directory) / "model.safetensors").string());
  // Layer counts, then names and shapes: nothing is built or uploaded for a model that does not match.
  model::check_layer_count(file, directory, "transformer.encoder.layers", c.num_encoder_layers, "num_encoder_layers");
  model::check_layer_count(file, directory, "transformer.decoder.layers", c.num_decoder_layers, "num_decoder_layers");
  expected_tensors(c).check(file, directory, "torch-seq2seq");

  auto m = std::make_unique<Impl>(Impl{.ctx = ctx, .config = c, .dtype = precision});
  model::Uploader up(ctx, file, precision);
  const uint32_t D = c.d_model;
  m->src_embed = up.tensor("src_embed.weight");
  m->tgt_embed = up.tensor("tgt_embed.weight");
  auto pe = sinusoidal_positions(c.max_position, D);
  m->positions = ctx.buffer(pe.size() * 4, "positions");  // fp32 in every precision
  ctx.upload(m->positions, std::span<const float>(pe));
  m->tgt_positions = m->positions;
  for (uint32_t i = 0; i < c.num_encoder_layers; ++i)
    m->encoder.push_back(up.encoder_layer("transformer.encoder.layers." + std::to_string(i), D));
  for (uint32_t i = 0; i < c.num_decoder_layers; ++i) {
    const std::string p = "transformer.decoder.layers." + std::to_string(i);
    m->decoder.push_back({.self_qkv = up.in_proj(p + ".self_attn", 0, 3 * D, D),
                          .self_out = up.linear(p + ".self_attn.out_proj"),
                          .cross_q = up.in_proj(p + ".multihead_attn", 0, D, D),
                          .cross_kv = up.in_proj(p + ".multihead_attn", D, 2 * D, D),
                          .cross_out = up.linear(p + ".multihead_attn.out_proj"),
                          .ffn = up.feed_forward(p),
                          .norm1 = up.norm(p + ".norm1"),
                          .norm2 = up.norm(p + ".norm2"),
                          .norm3 = up.norm(p + ".norm3")});
  }
  m->encoder_norm = up.norm("transformer.encoder.norm");
  m->decoder_norm = up.norm("transformer.decoder.norm");
  m->generator = up.linear("generator");
  return std::shared_ptr<const Model>(new Model(std::move(m)));
}

}  // namespace vkf
