// The torch-seq2seq family: PyTorch's nn.Transformer as tools/seq2seq.py saves it
// (vkformer's own format): config.json with "architecture": "torch-seq2seq" and
// model.safetensors under nn.Transformer's names, each declared once below with its
// shape and place; a character vocabulary (vocab.json) as its tokenizer.
#include <algorithm>
#include <filesystem>

#include "family.hpp"

namespace vkf {

namespace model {

namespace {

ModelConfig read_config(const ModelFiles& files) {
  return model::torch_seq2seq_config(model::ConfigReader(files, "config.json"));
}

std::string checkpoint(const ModelFiles&) { return "model.safetensors"; }

void declare_tensors(Checkpoint& t, Model::Impl& m) {
  const ModelConfig& c = m.config;
  const uint32_t D = c.d_model, F = c.dim_feedforward;
  const std::string encoder = "transformer.encoder", decoder = "transformer.decoder";
  t.layers(encoder + ".layers", c.num_encoder_layers, "num_encoder_layers");
  t.layers(decoder + ".layers", c.num_decoder_layers, "num_decoder_layers");
  t.embedding(m.src_embed, m.src_embed_blocks, "src_embed.weight", c.src_vocab_size, D);
  t.embedding(m.tgt_embed, m.tgt_embed_blocks, "tgt_embed.weight", c.tgt_vocab_size, D);
  m.encoder.resize(c.num_encoder_layers);
  for (uint32_t i = 0; i < c.num_encoder_layers; ++i)
    t.encoder_layer(m.encoder[i], encoder + ".layers." + std::to_string(i), D, F);
  m.decoder.resize(c.num_decoder_layers);
  for (uint32_t i = 0; i < c.num_decoder_layers; ++i) {  // nn.TransformerDecoderLayer
    const std::string p = decoder + ".layers." + std::to_string(i);
    DecoderLayer& l = m.decoder[i];
    t.in_proj(l.self_qkv, p + ".self_attn", D);
    t.linear(l.self_out, p + ".self_attn.out_proj", D, D);
    t.in_proj(l.cross_q, l.cross_kv, p + ".multihead_attn", D);
    t.linear(l.cross_out, p + ".multihead_attn.out_proj", D, D);
    t.linear(l.ffn.linear1, p + ".linear1", F, D);
    t.linear(l.ffn.linear2, p + ".linear2", D, F);
    t.norm(l.norm1, p + ".norm1", D);
    t.norm(l.norm2, p + ".norm2", D);
    t.norm(l.norm3, p + ".norm3", D);
  }
  t.norm(m.encoder_norm, encoder + ".norm", D);
  t.norm(m.decoder_norm, decoder + ".norm", D);
  t.linear(m.generator, "generator", c.tgt_vocab_size, D);
  t.then([&m] {
    const auto pe = sinusoidal_positions(m.config.max_position, m.config.d_model);
    m.positions = m.ctx.buffer(pe.size() * 4, "positions");  // fp32 in every precision
    m.ctx.upload(m.positions, std::span<const float>(pe));
    m.tgt_positions = m.positions;
  });
}

std::unique_ptr<Tokenizer> make_tokenizer(const ModelFiles& files, const ConfigReader& config) {
  const uint32_t vocab = std::max(config.count("src_vocab_size", 1), config.count("tgt_vocab_size", 1));
  if (!files.has("vocab.json"))
    throw Error("model " + files.label() + " has no vocab.json, the character vocabulary that text needs (its format: "
                "README, \"Bring your own PyTorch model\"; tools/export.py writes it given tokens=[...]); "
                "without one, give token ids instead", ErrorKind::NotFound);
  return std::make_unique<CharTokenizer>(CharTokenizer::from_file(files, "vocab.json", vocab));
}

}  // namespace

const Family kTorchSeq2Seq{"torch-seq2seq", false, ModelTask::Generator, read_config, checkpoint, declare_tensors,
                           make_tokenizer, {"vocab.json"}};

}  // namespace model

}  // namespace vkf
