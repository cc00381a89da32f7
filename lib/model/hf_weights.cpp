// A Hugging Face Marian or BART model.safetensors (or its shards) as vkformer's encoder-decoder weights:
// q_proj, k_proj and v_proj become one projection, the shared embedding serves the
// encoder, the decoder and (tied) the output projection, whose bias is final_logits_bias.
#include <filesystem>

#include "expected_tensors.hpp"
#include "hf_model.hpp"
#include "uploader.hpp"

namespace vkf::model {

namespace {

void hf_attention(ExpectedTensors& t, const std::string& p, uint64_t d) {
  for (const char* n : {".q_proj", ".k_proj", ".v_proj", ".out_proj"}) t.linear(p + n, d, d);
}

// The names of the embeddings and the output projection: tied ones are absent from the
// file (save_pretrained drops them) and fall back to model.shared.weight.
struct Embeddings {
  std::string src, tgt, generator;
};

Embeddings embeddings(const SafeTensors& f) {
  auto has = [&](const std::string& n) { return f.tensors().count(n) > 0; };
  Embeddings e;
  e.src = has("model.encoder.embed_tokens.weight") ? "model.encoder.embed_tokens.weight" : "model.shared.weight";
  e.tgt = has("model.decoder.embed_tokens.weight") ? "model.decoder.embed_tokens.weight" : "model.shared.weight";
  e.generator = has("lm_head.weight") ? "lm_head.weight" : e.tgt;
  return e;
}

ExpectedTensors expected_tensors(const ModelConfig& c, const SafeTensors& f, const Embeddings& e) {
  const uint64_t D = c.d_model, F = c.dim_feedforward;
  auto has = [&](const std::string& n) { return f.tensors().count(n) > 0; };
  ExpectedTensors t;
  if (e.src == "model.shared.weight" || e.tgt == "model.shared.weight" || has("model.shared.weight"))
    t.add("model.shared.weight", {c.src_vocab_size, D});
  if (e.src != "model.shared.weight") t.add(e.src, {c.src_vocab_size, D});
  if (e.tgt != "model.shared.weight") t.add(e.tgt, {c.tgt_vocab_size, D});
  if (e.generator == "lm_head.weight") t.add("lm_head.weight", {c.tgt_vocab_size, D});
  t.add("final_logits_bias", {1, c.tgt_vocab_size});
  for (const char* stack : {"model.encoder", "model.decoder"}) {
    const std::string s = stack;
    if (c.positions == ModelConfig::Positions::Learned) {
      t.add(s + ".embed_positions.weight", {c.max_position + 2ull, D});  // BART's offset of 2
    } else if (has(s + ".embed_positions.weight")) {
      t.add(s + ".embed_positions.weight", {c.max_position, D});  // older Marian saves: recomputed, not read
    }
    if (c.embedding_norm) t.norm(s + ".layernorm_embedding", D);
  }
  for (uint32_t i = 0; i < c.num_encoder_layers; ++i) {
    const std::string p = "model.encoder.layers." + std::to_string(i);
    hf_attention(t, p + ".self_attn", D);
    t.norm(p + ".self_attn_layer_norm", D);
    t.linear(p + ".fc1", F, D);
    t.linear(p + ".fc2", D, F);
    t.norm(p + ".final_layer_norm", D);
  }
  for (uint32_t i = 0; i < c.num_decoder_layers; ++i) {
    const std::string p = "model.decoder.layers." + std::to_string(i);
    hf_attention(t, p + ".self_attn", D);
    t.norm(p + ".self_attn_layer_norm", D);
    hf_attention(t, p + ".encoder_attn", D);
    t.norm(p + ".encoder_attn_layer_norm", D);
    t.linear(p + ".fc1", F, D);
    t.linear(p + ".fc2", D, F);
    t.norm(p + ".final_layer_norm", D);
  }
  return t;
}

std::vector<std::string> with_suffixes(const std::string& p, std::initializer_list<const char*> suffixes) {
  std::vector<std::string> out;
  for (const char* s : suffixes) out.push_back(p + s);
  return out;
}

}  // namespace

std::string hf_checkpoint(const std::string& directory) {
  namespace fs = std::filesystem;
  const fs::path dir(directory);
  std::error_code ec;
  // One file, or a sharded checkpoint (save_pretrained's default past 5 GB): its index.
  std::string checkpoint = (dir / "model.safetensors").string();
  if (fs::exists(checkpoint, ec)) return checkpoint;
  checkpoint = (dir / "model.safetensors.index.json").string();
  if (fs::exists(checkpoint, ec)) return checkpoint;
  if (fs::exists(dir / "pytorch_model.bin", ec) || fs::exists(dir / "pytorch_model.bin.index.json", ec))
    throw Error("model " + directory + " has only pytorch_model.bin (a pickle, which vkformer does not read): convert "
                "it with transformers: the model's from_pretrained(dir), then save_pretrained(dir, "
                "safe_serialization=True), which writes model.safetensors");
  throw Error("model " + directory + ": missing model.safetensors (or a sharded model.safetensors.index.json)");
}

std::unique_ptr<Model::Impl> load_hf_weights(Context& ctx, const std::string& directory, const ModelConfig& c,
                                             DType precision) {
  namespace fs = std::filesystem;
  const fs::path dir(directory);
  std::error_code ec;
  SafeTensors file(hf_checkpoint(directory));
  const Embeddings e = embeddings(file);
  check_layer_count(file, directory, "model.encoder.layers", c.num_encoder_layers, "encoder_layers");
  check_layer_count(file, directory, "model.decoder.layers", c.num_decoder_layers, "decoder_layers");
  expected_tensors(c, file, e).check(file, directory, c.architecture);

  auto m = std::make_unique<Model::Impl>(Model::Impl{.ctx = ctx, .config = c, .dtype = precision});
  Uploader up(ctx, file, precision);
  const uint32_t D = c.d_model;
  m->src_embed = up.tensor(e.src);
  m->tgt_embed = e.tgt == e.src ? m->src_embed : up.tensor(e.tgt);
  m->generator = {.weight = e.generator == e.tgt ? m->tgt_embed : up.tensor(e.generator),
                  .bias = up.tensor("final_logits_bias"), .out = c.tgt_vocab_size, .in = D};
  if (c.positions == ModelConfig::Positions::Learned) {
    m->positions = up.fp32_rows("model.encoder.embed_positions.weight", 2, c.max_position);
    m->tgt_positions = up.fp32_rows("model.decoder.embed_positions.weight", 2, c.max_position);
  } else {
    const auto pe = sinusoidal_positions(c.max_position, D, /*halves=*/true);
    m->positions = ctx.buffer(pe.size() * 4, "positions");  // fp32 in every precision
    ctx.upload(m->positions, std::span<const float>(pe));
    m->tgt_positions = m->positions;
  }
  if (c.embedding_norm) {
    m->encoder_embed_norm = up.norm("model.encoder.layernorm_embedding");
    m->decoder_embed_norm = up.norm("model.decoder.layernorm_embedding");
  }
  for (uint32_t i = 0; i < c.num_encoder_layers; ++i) {
    const std::string p = "model.encoder.layers." + std::to_string(i);
    m->encoder.push_back({.self_qkv = up.stacked_linear(with_suffixes(p + ".self_attn", {".q_proj", ".k_proj", ".v_proj"})),
                          .self_out = up.linear(p + ".self_attn.out_proj"),
                          .ffn = {up.linear(p + ".fc1"), up.linear(p + ".fc2")},
                          .norm1 = up.norm(p + ".self_attn_layer_norm"),
                          .norm2 = up.norm(p + ".final_layer_norm")});
  }
  for (uint32_t i = 0; i < c.num_decoder_layers; ++i) {
    const std::string p = "model.decoder.layers." + std::to_string(i);
    m->decoder.push_back({.self_qkv = up.stacked_linear(with_suffixes(p + ".self_attn", {".q_proj", ".k_proj", ".v_proj"})),
                          .self_out = up.linear(p + ".self_attn.out_proj"),
                          .cross_q = up.linear(p + ".encoder_attn.q_proj"),
                          .cross_kv = up.stacked_linear(with_suffixes(p + ".encoder_attn", {".k_proj", ".v_proj"})),
                          .cross_out = up.linear(p + ".encoder_attn.out_proj"),
                          .ffn = {up.linear(p + ".fc1"), up.linear(p + ".fc2")},
                          .norm1 = up.norm(p + ".self_attn_layer_norm"),
                          .norm2 = up.norm(p + ".encoder_attn_layer_norm"),
                          .norm3 = up.norm(p + ".final_layer_norm")});
  }
  return m;
}

}  // namespace vkf::model
