// Buffers sized by what a pass needs: a decoder-only model with SmolLM's vocabulary
// (49,152 tokens) generates 16 sequences of 71 positions on a device that binds 128 MiB
// (the logits of every position would be 213 MiB; generation keeps each sequence's last:
// 3 MiB), and scoring more positions' logits than one binding holds is a named error,
// never a failed binding or a silently short result.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "support/gpu_test.hpp"
#include "vkformer/model.hpp"

namespace fs = std::filesystem;

namespace vkf::test {
namespace {

// A random Llama (tied embeddings, fp16 weights) written as save_pretrained would.
struct LargeVocabularyLlama {
  static constexpr uint32_t kVocab = 49152, kD = 32, kFfn = 48, kPositions = 1024;
  fs::path dir;
  LargeVocabularyLlama() {
    dir = fs::temp_directory_path() / ("vkf_large_vocab_" + std::to_string(::getpid()));
    fs::create_directories(dir);
    const nlohmann::json config = {
        {"model_type", "llama"},        {"hidden_size", kD},         {"intermediate_size", kFfn},
        {"num_hidden_layers", 1},       {"num_attention_heads", 2}, {"num_key_value_heads", 1},
        {"vocab_size", kVocab},         {"max_position_embeddings", kPositions},
        {"tie_word_embeddings", true},  {"rms_norm_eps", 1e-5},     {"bos_token_id", 1},
        {"eos_token_id", 2}};
    std::ofstream(dir / "config.json") << config.dump();
    const std::vector<std::pair<std::string, std::vector<uint64_t>>> tensors = {
        {"model.embed_tokens.weight", {kVocab, kD}},
        {"model.norm.weight", {kD}},
        {"model.layers.0.input_layernorm.weight", {kD}},
        {"model.layers.0.post_attention_layernorm.weight", {kD}},
        {"model.layers.0.self_attn.q_proj.weight", {kD, kD}},
        {"model.layers.0.self_attn.k_proj.weight", {kD / 2, kD}},
        {"model.layers.0.self_attn.v_proj.weight", {kD / 2, kD}},
        {"model.layers.0.self_attn.o_proj.weight", {kD, kD}},
        {"model.layers.0.mlp.gate_proj.weight", {kFfn, kD}},
        {"model.layers.0.mlp.up_proj.weight", {kFfn, kD}},
        {"model.layers.0.mlp.down_proj.weight", {kD, kFfn}}};
    nlohmann::json header = nlohmann::json::object();
    std::string data;
    std::mt19937 rng(5);
    std::normal_distribution<float> normal(0.0f, 0.2f);
    for (const auto& [name, shape] : tensors) {
      uint64_t n = 1;
      for (uint64_t d : shape) n *= d;
      const bool norm = name.find("norm") != std::string::npos;
      header[name] = {{"dtype", "F16"}, {"shape", shape}, {"data_offsets", {data.size(), data.size() + 2 * n}}};
      for (uint64_t i = 0; i < n; ++i) {
        const uint16_t h = vkf::float_to_half(norm ? 1.0f : normal(rng));
        data.append(reinterpret_cast<const char*>(&h), 2);
      }
    }
    std::string text = header.dump();
    text.append((8 - text.size() % 8) % 8, ' ');
    const uint64_t length = text.size();
    std::ofstream out(dir / "model.safetensors", std::ios::binary);
    out.write(reinterpret_cast<const char*>(&length), 8);
    out << text << data;
  }
  ~LargeVocabularyLlama() { fs::remove_all(dir); }
};

TEST_F(GpuTest, SixteenSequencesOfALargeVocabularyFitWhatTheDeviceBinds) {
  const LargeVocabularyLlama files;
  const auto model = Model::load(ctx(), files.dir.string(), DType::F32);
  Session session(model);
  const uint64_t bind = ctx().capabilities().max_storage_buffer_range;
  std::vector<std::vector<uint32_t>> prompts;
  for (uint32_t b = 0; b < 16; ++b) prompts.push_back({4, 11, 18, 25, uint32_t(32 + b % 4)});
  const uint32_t new_tokens = 67;  // 5 + 67 - 1 = 71 positions per sequence
  ASSERT_GT(16ull * 71 * LargeVocabularyLlama::kVocab * 4, bind)
      << "the device binds every position's logits: this check would not see the old sizing";
  const auto out = session.generate(prompts, {.max_new_tokens = new_tokens, .stop_at_eos = false});
  ASSERT_EQ(out.size(), 16u);
  for (const auto& o : out) EXPECT_EQ(o.size(), new_tokens);
  // Each sequence computes what it would alone: the first and the last prompt's tokens.
  for (size_t i : {size_t(0), size_t(15)})
    EXPECT_EQ(session.generate({prompts[i]}, {.max_new_tokens = new_tokens, .stop_at_eos = false})[0], out[i]) << i;

  // score()'s logits of every position: past one binding, a named error.
  const uint64_t most = bind / (uint64_t(LargeVocabularyLlama::kVocab) * 4);
  if (most + 1 <= LargeVocabularyLlama::kPositions) {
    std::vector<uint32_t> ids(most + 1, 7);
    try {
      session.score(ids);
      FAIL() << "scored " << ids.size() << " positions' logits past one binding";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("in one buffer"), std::string::npos) << e.what();
      EXPECT_EQ(e.kind(), ErrorKind::InvalidInput);
    }
    EXPECT_EQ(session.score(std::vector<uint32_t>(100, 7)).size(), 100u * LargeVocabularyLlama::kVocab);
  }
}

}  // namespace
}  // namespace vkf::test
