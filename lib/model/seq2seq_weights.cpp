// Loading a torch-seq2seq directory: every tensor is checked against the config before
// anything reaches the GPU, then uploaded in the chosen precision.
#include <filesystem>
#include <set>

#include "model/safetensors.hpp"
#include "model/seq2seq.hpp"
#include "model/uploader.hpp"

namespace vkf {

namespace {

using Shape = std::vector<uint64_t>;

std::string shape_str(const Shape& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}

// Every tensor name the config implies, with its shape.
std::vector<std::pair<std::string, Shape>> expected_tensors(const ModelConfig& c) {
  const uint64_t D = c.d_model, F = c.dim_feedforward;
  std::vector<std::pair<std::string, Shape>> t = {{"src_embed.weight", {c.src_vocab_size, D}},
                                                  {"tgt_embed.weight", {c.tgt_vocab_size, D}},
                                                  {"generator.weight", {c.tgt_vocab_size, D}},
                                                  {"generator.bias", {c.tgt_vocab_size}},
                                                  {"transformer.encoder.norm.weight", {D}},
                                                  {"transformer.encoder.norm.bias", {D}},
                                                  {"transformer.decoder.norm.weight", {D}},
                                                  {"transformer.decoder.norm.bias", {D}}};
  auto attn = [&](const std::string& p) {
    t.push_back({p + ".in_proj_weight", {3 * D, D}});
    t.push_back({p + ".in_proj_bias", {3 * D}});
    t.push_back({p + ".out_proj.weight", {D, D}});
    t.push_back({p + ".out_proj.bias", {D}});
  };
  auto ffn_norms = [&](const std::string& p, int norms) {
    t.push_back({p + ".linear1.weight", {F, D}});
    t.push_back({p + ".linear1.bias", {F}});
    t.push_back({p + ".linear2.weight", {D, F}});
    t.push_back({p + ".linear2.bias", {D}});
    for (int n = 1; n <= norms; ++n) {
      t.push_back({p + ".norm" + std::to_string(n) + ".weight", {D}});
      t.push_back({p + ".norm" + std::to_string(n) + ".bias", {D}});
    }
  };
  for (uint32_t i = 0; i < c.num_encoder_layers; ++i) {
    const std::string p = "transformer.encoder.layers." + std::to_string(i);
    attn(p + ".self_attn");
    ffn_norms(p, 2);
  }
  for (uint32_t i = 0; i < c.num_decoder_layers; ++i) {
    const std::string p = "transformer.decoder.layers." + std::to_string(i);
    attn(p + ".self_attn");
    attn(p + ".multihead_attn");
    ffn_norms(p, 3);
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
  if (!fs::is_directory(directory)) throw Error("model directory '" + directory + "' does not exist");
  ModelConfig c = ModelConfig::from_file((fs::path(directory) / "config.json").string());
  model::SafeTensors file((fs::path(directory) / "model.safetensors").string());

  // Names and shapes first: nothing is uploaded from a model that does not match.
  auto expected = expected_tensors(c);
  std::set<std::string> names;
  for (auto& [name, shape] : expected) {
    names.insert(name);
    auto it = file.tensors().find(name);
    if (it == file.tensors().end()) throw Error("model " + directory + ": missing tensor '" + name + "'");
    if (it->second.shape != shape)
      throw Error("model " + directory + ": tensor '" + name + "' has shape " + shape_str(it->second.shape) +
                  ", the config implies " + shape_str(shape));
  }
  for (auto& [name, info] : file.tensors())
    if (!names.count(name))
      throw Error("model " + directory + ": unexpected tensor '" + name + "' (not part of a torch-seq2seq with this config)");
  if (precision == DType::F16 && !ctx.capabilities().storage_16bit)
    throw Error("fp16 precision needs 16-bit storage, which device '" + ctx.capabilities().name + "' lacks");

  auto m = std::make_unique<Impl>(Impl{ctx, c, precision, {}, {}, {}, {}, {}, {}, {}, {}});
  model::Uploader up(ctx, file, precision);
  const uint32_t D = c.d_model;
  m->src_embed = up.tensor("src_embed.weight");
  m->tgt_embed = up.tensor("tgt_embed.weight");
  auto pe = sinusoidal_positions(c.max_position, D);
  m->positions = ctx.buffer(pe.size() * 4, "positions");
  ctx.upload(m->positions, std::span<const float>(pe));
  for (uint32_t i = 0; i < c.num_encoder_layers; ++i) {
    m->encoder.push_back(up.encoder_layer("transformer.encoder.layers." + std::to_string(i), D));
  }
  for (uint32_t i = 0; i < c.num_decoder_layers; ++i) {
    const std::string p = "transformer.decoder.layers." + std::to_string(i);
    m->decoder.push_back({up.in_proj(p + ".self_attn", 0, 3 * D, D), up.linear(p + ".self_attn.out_proj"),
                          up.in_proj(p + ".multihead_attn", 0, D, D), up.in_proj(p + ".multihead_attn", D, 2 * D, D),
                          up.linear(p + ".multihead_attn.out_proj"), up.linear(p + ".linear1"),
                          up.linear(p + ".linear2"), up.norm(p + ".norm1"), up.norm(p + ".norm2"),
                          up.norm(p + ".norm3")});
  }
  m->encoder_norm = up.norm("transformer.encoder.norm");
  m->decoder_norm = up.norm("transformer.decoder.norm");
  m->generator = up.linear("generator");
  return std::shared_ptr<const Model>(new Model(std::move(m)));
}

}  // namespace vkf
