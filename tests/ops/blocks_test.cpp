// llama.cpp's block types on the host (vkformer/blocks.hpp): our quantizer's blocks and
// their dequantized values against the gguf package's (llama.cpp's reference quantizers
// in numpy; tools/block_references/make_block_references.py wrote the JSON), bit for bit,
// on random blocks from 1e-6 to 1e4 and on edge cases (zeros, a constant, ties).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "vkformer/blocks.hpp"
#include "vkformer/error.hpp"

namespace vkf::test {
namespace {

std::vector<uint8_t> from_hex(const std::string& hex) {
  std::vector<uint8_t> out(hex.size() / 2);
  for (size_t i = 0; i < out.size(); ++i) out[i] = uint8_t(std::stoi(hex.substr(2 * i, 2), nullptr, 16));
  return out;
}

std::vector<float> floats(const std::vector<uint8_t>& bytes) {
  std::vector<float> out(bytes.size() / 4);
  std::memcpy(out.data(), bytes.data(), bytes.size());
  return out;
}

const nlohmann::json& references() {
  static const nlohmann::json j = [] {
    std::ifstream in(std::string(VKF_OPS_SOURCE_DIR) + "/block_references.json");
    return nlohmann::json::parse(in);
  }();
  return j;
}

const nlohmann::json& k_references() {
  static const nlohmann::json j = [] {
    std::ifstream in(std::string(VKF_OPS_SOURCE_DIR) + "/k_quant_references.json");
    return nlohmann::json::parse(in);
  }();
  return j;
}

double rmse(const std::vector<float>& a, const std::vector<float>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
  return std::sqrt(s / double(a.size()));
}

// The 32-value types against the gguf package's quantizers; the K-quants against
// llama.cpp's own (tools/block_references/make_k_quant_references.py: gguf only
// dequantizes them), on super-blocks from 1e-6 to 1e4 and edge cases (zeros, a
// constant, one value, sub-blocks of scales 1e-3 to 1e4 in one super-block, a zero
// sub-block among others); dequantization against gguf's, bit for bit.
TEST(Blocks, QuantizeAndDequantizeAsLlamaCppDoesBitForBit) {
  for (const nlohmann::json* refs : {&references(), &k_references()}) {
  const std::vector<float> values = floats(from_hex((*refs)["values"]));
  ASSERT_EQ(values.size() % kSuperBlockValues, 0u);
  for (BlockType t : kBlockTypes) {
    if (!(*refs)["blocks"].contains(block_type_name(t))) continue;
    SCOPED_TRACE(block_type_name(t));
    const std::vector<uint8_t> want = from_hex((*refs)["blocks"][block_type_name(t)]);
    const std::vector<uint8_t> got = quantize_blocks(t, values);
    ASSERT_EQ(got.size(), want.size());
    size_t differing = 0;
    for (size_t b = 0; b < got.size() / block_bytes(t); ++b)
      differing += std::memcmp(got.data() + b * block_bytes(t), want.data() + b * block_bytes(t), block_bytes(t)) != 0;
    EXPECT_EQ(differing, 0u) << "blocks differing from the gguf package's, of " << got.size() / block_bytes(t);
    const std::vector<float> back = dequantize_blocks(t, want);
    const std::vector<float> want_back = floats(from_hex((*refs)["dequantized"][block_type_name(t)]));
    ASSERT_EQ(back.size(), want_back.size());
    EXPECT_EQ(std::memcmp(back.data(), want_back.data(), back.size() * 4), 0);
    // The scale search has no unique answer: were a block to differ (another compiler's
    // rounding), ours must still be no worse.
    const double ours = rmse(dequantize_blocks(t, got), values), theirs = rmse(want_back, values);
    EXPECT_LE(ours, theirs * (1 + 1e-12)) << "RMSE against the fp32 values";
    std::printf("[ figures  ] %s: RMSE %.6g (llama.cpp's %.6g) over %zu values\n", block_type_name(t), ours, theirs,
                values.size());
  }
  }
}

// The codes carry the values to within half a step of the block's scale (Q8_0) or a
// step (the others), and the scale and minimum to within fp16's rounding.
TEST(Blocks, RoundTripWithinTheScale) {
  const std::vector<float> values = floats(from_hex(references()["values"]));
  for (BlockType t : kBlockTypes) {
    if (is_k_quant(t)) continue;  // (their scales are searched for: checked against llama.cpp's above)
    SCOPED_TRACE(block_type_name(t));
    const std::vector<uint8_t> blocks = quantize_blocks(t, values);
    const std::vector<float> back = dequantize_blocks(t, blocks);
    for (size_t b = 0; b < values.size() / kBlockValues; ++b) {
      float amax = 0, lo = values[b * kBlockValues], hi = lo;
      for (uint32_t j = 0; j < kBlockValues; ++j) {
        const float v = values[b * kBlockValues + j];
        amax = std::max(amax, std::fabs(v)), lo = std::min(lo, v), hi = std::max(hi, v);
      }
      const double levels = t == BlockType::Q8_0 ? 127 : t == BlockType::Q4_0 ? 8 : t == BlockType::Q5_0 ? 16
                            : t == BlockType::Q4_1 ? 15 : 31;
      const bool with_min = t == BlockType::Q4_1 || t == BlockType::Q5_1;
      const double step = with_min ? (hi - lo) / levels : amax / levels;
      // Half a step for Q8_0 (rounded, symmetric); a whole one for the others (Q4_0's and
      // Q5_0's codes reach 8 and 16 steps on their extreme's side but 7 and 15 on the
      // other; with a minimum, truncation after the shift), plus the
      // scale's and the minimum's rounding to fp16 (2^-11 relative, 2^-25 absolute where
      // subnormal: a block of values near 1e-6 has a scale that fp16 barely holds).
      const double fp16 = std::ldexp(1.0, -11), tiny = std::ldexp(1.0, -24);
      const double bound = (t == BlockType::Q8_0 ? 0.5 : 1.0) * step * 1.0001 + levels * (step * fp16 + tiny) +
                           (with_min ? std::fabs(lo) * fp16 + tiny : 0.0);
      for (uint32_t j = 0; j < kBlockValues; ++j)
        ASSERT_LE(std::fabs(double(back[b * kBlockValues + j]) - values[b * kBlockValues + j]), bound)
            << "block " << b << " value " << j;
    }
  }
}

TEST(Blocks, NamesSizesAndRefusals) {
  for (BlockType t : kBlockTypes) EXPECT_EQ(block_type_from_name(block_type_name(t)), t);
  EXPECT_EQ(block_type_from_name("q4_k"), BlockType::Q4_K);
  EXPECT_EQ(block_type_from_name("q4_k_m"), std::nullopt);
  EXPECT_EQ(block_mix_from_name("q4_k_m"), BlockMix::Q4_K_M);
  EXPECT_EQ(block_bits_per_value(BlockType::Q4_K), 4.5);
  EXPECT_EQ(block_bits_per_value(BlockType::Q6_K), 6.5625);
  EXPECT_EQ(block_bits_per_value(BlockType::Q8_0), 8.5);
  EXPECT_EQ(block_bits_per_value(BlockType::Q4_0), 4.5);
  std::vector<float> x(33, 1.0f);
  EXPECT_THROW(quantize_blocks(BlockType::Q8_0, x), Error);  // not whole blocks
  x.resize(32);
  x[7] = NAN;
  try {
    quantize_blocks(BlockType::Q4_0, x);
    ADD_FAILURE() << "a NaN quantized";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("value 7 (block 0) is not finite"), std::string::npos) << e.what();
  }
  EXPECT_THROW(dequantize_blocks(BlockType::Q5_1, std::vector<uint8_t>(25)), Error);
}

// llama.cpp's Q4_K_M and Q5_K_M rule (mix_block_type) against the types llama-quantize
// chose for every 2-D tensor of a 32-layer Llama whose FFN rows (544 values) are not whole
// super-blocks (the layer pattern and the fallbacks) and of an 8-layer Llama with tied
// embeddings (tests/ops/llama_quantize_types.json, from tools/peer_llama.py).
TEST(Blocks, MixesChooseAsLlamaQuantizeDoes) {
  std::ifstream in(std::string(VKF_OPS_SOURCE_DIR) + "/llama_quantize_types.json");
  const nlohmann::json refs = nlohmann::json::parse(in);
  size_t checked = 0;
  for (const auto& [model, m] : refs["models"].items()) {
    const uint32_t layers = m["layers"];
    for (const auto& [mix_name, tensors] : m["mixes"].items()) {
      const auto mix = block_mix_from_name(mix_name);
      ASSERT_TRUE(mix) << mix_name;
      for (const auto& [name, t] : tensors.items()) {
        static const std::pair<const char*, WeightRole> kRoles[] = {
            {"attn_q", WeightRole::AttentionQ},       {"attn_k", WeightRole::AttentionK},
            {"attn_v", WeightRole::AttentionV},       {"attn_output", WeightRole::AttentionOutput},
            {"ffn_gate", WeightRole::FfnGate},        {"ffn_up", WeightRole::FfnUp},
            {"ffn_down", WeightRole::FfnDown}};
        WeightPlace place{.role = WeightRole::Output, .layers = layers, .tied = bool(m["tied"])};
        if (name == "token_embd.weight") {
          place.role = WeightRole::TokenEmbedding;
        } else if (name != "output.weight") {
          unsigned layer = 0;
          char kind[32] = {};
          ASSERT_EQ(std::sscanf(name.c_str(), "blk.%u.%31[a-z_].weight", &layer, kind), 2) << name;
          const auto* role = std::find_if(std::begin(kRoles), std::end(kRoles),
                                          [&](const auto& r) { return std::string(kind) == r.first; });
          ASSERT_NE(role, std::end(kRoles)) << name;
          place.role = role->second, place.layer = layer;
        }
        const auto got = mix_block_type(*mix, place, t["cols"].get<uint64_t>());
        EXPECT_EQ(got ? block_type_name(*got) : "f16", t["type"].get<std::string>()) << model << " " << mix_name << " " << name;
        ++checked;
      }
    }
  }
  EXPECT_EQ(checked, 566u);  // every tensor of both models under both mixes
}

}  // namespace
}  // namespace vkf::test
