// The torch-seq2seq family: PyTorch's nn.Transformer as tools/seq2seq.py saves it
// (vkformer's own format): config.json with "architecture": "torch-seq2seq" and
// model.safetensors under nn.Transformer's names. Every tensor is checked against the
// config before anything reaches the GPU, then uploaded in the chosen precision.
#include <filesystem>

#include "config_reader.hpp"
#include "expected_tensors.hpp"
#include "family.hpp"
#include "uploader.hpp"

namespace vkf {

namespace model {

namespace {

// Every tensor name the config implies, with its shape.
ExpectedTensors expected_tensors(const ModelConfig& c) {
  const uint64_t D = c.d_model, F = c.dim_feedforward;
  ExpectedTensors t;
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


ModelConfig read_config(const ModelFiles& files) {
  return model::torch_seq2seq_config(model::ConfigReader(files, "config.json"));
}

std::unique_ptr<Model::Impl> load_weights(Context& ctx, const ModelFiles& files, const ModelConfig& c,
                                          DType precision) {
  SafeTensors file(files, "model.safetensors");
  // Layer counts, then names and shapes: nothing is built or uploaded for a model that does not match.
  check_layer_count(file, files.label(), "transformer.encoder.layers", c.num_encoder_layers, "num_encoder_layers");
  check_layer_count(file, files.label(), "transformer.decoder.layers", c.num_decoder_layers, "num_decoder_layers");
  expected_tensors(c).check(file, files.label(), "torch-seq2seq");

  auto m = std::make_unique<Model::Impl>(Model::Impl{.ctx = ctx, .config = c, .dtype = precision});
  Uploader up(ctx, file, precision);
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
  return m;
}

}  // namespace

const Family kTorchSeq2Seq{"torch-seq2seq", false, read_config, load_weights};

}  // namespace model
}  // namespace vkf
