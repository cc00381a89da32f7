// Weights in llama.cpp's blocks on the device (vkformer/tensor_io.hpp: upload_blocks):
// repacked from llama.cpp's 18-34-byte blocks into regions of 32-bit words that the
// kernels load 16 bytes at a time (shaders/blocks.glsl describes the layout; the two
// must agree, and tests/ops/gemm_blocks_test.cpp checks that they do).
#include <algorithm>
#include <cstring>

#include "block_weights.hpp"
#include "../core/k_quants.hpp"
#include "vkformer/tensor_io.hpp"

namespace vkf {

namespace {

// The regions, in 32-bit words from the buffer's start (shaders/blocks.glsl).
struct Layout {
  uint32_t code_words, high_words;  // per 32-value unit
  bool min, super;                  // a minimum; K-quant super-block scales
  uint64_t units, qh_at, scales_at, d_at, words;
};

uint64_t align4(uint64_t words) { return (words + 3) & ~uint64_t(3); }

bool has_min(BlockType t) {
  return t == BlockType::Q4_1 || t == BlockType::Q5_1 || t == BlockType::Q4_K || t == BlockType::Q5_K;
}
uint32_t high_words(BlockType t) {
  return t == BlockType::Q6_K ? 2 : t == BlockType::Q5_0 || t == BlockType::Q5_1 || t == BlockType::Q5_K ? 1 : 0;
}

Layout layout(BlockType t, uint64_t rows, uint64_t cols) {
  Layout l{.code_words = t == BlockType::Q8_0 ? 8u : 4u, .high_words = high_words(t), .min = has_min(t),
           .super = is_k_quant(t), .units = rows * (cols / kBlockValues)};
  l.qh_at = align4(l.units * l.code_words);
  l.scales_at = align4(l.qh_at + l.units * l.high_words);
  if (l.super) {  // 4 words a super-block; Q6_K's d after them, two to a word
    l.d_at = l.scales_at + l.units / 8 * 4;
    l.words = align4(l.d_at + (t == BlockType::Q6_K ? (l.units / 8 + 1) / 2 : 0));
  } else {
    l.d_at = l.scales_at;
    l.words = align4(l.scales_at + (l.min ? l.units : (l.units + 1) / 2));
  }
  return l;
}

uint32_t word_at(const uint8_t* b) { return uint32_t(b[0]) | uint32_t(b[1]) << 8 | uint32_t(b[2]) << 16 | uint32_t(b[3]) << 24; }
uint16_t half_at(const uint8_t* b) { return uint16_t(b[0] | b[1] << 8); }
bool not_finite(uint16_t h) { return (h & 0x7C00) == 0x7C00; }

// Where a unit (or super-block) of `row` lies on the device (blocks.glsl: block_at): row
// groups of `group`, by unit, then row.
uint64_t device_at(uint64_t row, uint64_t unit, uint64_t rows, uint64_t units_a_row, uint64_t group) {
  const uint64_t first = row - row % group;
  return first * units_a_row + unit * std::min<uint64_t>(group, rows - first) + (row - first);
}

// Where code j's fifth bit lies in a 5-bit type's qh word on the device (blocks.glsl).
uint32_t fifth_bit_at(uint32_t j) { return 8 * (j % 4) + 4 * (j / 16) + j % 16 / 4; }
uint32_t device_qh(uint32_t llama_qh) {
  uint32_t out = 0;
  for (uint32_t j = 0; j < kBlockValues; ++j) out |= ((llama_qh >> j) & 1) << fifth_bit_at(j);
  return out;
}

// A K-quant unit's 32 codes in the 32-value types' order: low nibbles of codes j and
// j + 16 in byte j, the fifth bits (Q5_K) in one word, Q6_K's top bit pairs in two
// (codes 0-15, then 16-31; blocks.glsl says where in them).
void k_unit(BlockType t, const uint8_t* super, uint32_t unit, uint32_t* codes, uint32_t* high) {
  uint8_t q[kBlockValues];
  for (uint32_t i = 0; i < kBlockValues; ++i) q[i] = k_quants::code(t, super, int(unit * kBlockValues + i));
  uint8_t bytes[16];
  for (uint32_t j = 0; j < 16; ++j) bytes[j] = uint8_t((q[j] & 0xF) | (q[j + 16] & 0xF) << 4);
  std::memcpy(codes, bytes, 16);
  if (t == BlockType::Q5_K) {
    high[0] = 0;
    for (uint32_t i = 0; i < kBlockValues; ++i) high[0] |= uint32_t((q[i] >> 4) & 1) << fifth_bit_at(i);
  } else if (t == BlockType::Q6_K) {
    high[0] = high[1] = 0;
    // Code j's pair in word j / 16 at bit 8 (j % 4) + 2 (j % 16 / 4): beside the byte that
    // holds its nibble once shifted (gemm_columns_blocks.glsl joins them in place).
    for (uint32_t i = 0; i < kBlockValues; ++i) high[i / 16] |= uint32_t(q[i] >> 4 & 3) << (8 * (i % 4) + 2 * (i % 16 / 4));
  }
}

}  // namespace

namespace ops {

uint32_t block_interleave(const Capabilities& caps) { return caps.type == DeviceType::Cpu ? 16 : 1; }

Defines block_defines(BlockType t, const Capabilities& caps) {
  Defines d = {{"QTYPE", std::to_string(uint32_t(t))},
               {"Q_CODE_WORDS", t == BlockType::Q8_0 ? "8" : "4"},
               {"Q_OFFSET", t == BlockType::Q4_0 ? "8.0" : t == BlockType::Q5_0 ? "16.0" : t == BlockType::Q6_K ? "32.0" : "0.0"}};
  if (high_words(t) == 1) d.emplace_back("Q_HIGH_BIT", "1");
  if (high_words(t) == 2) d.emplace_back("Q_HIGH_PAIRS", "1");
  if (has_min(t)) d.emplace_back("Q_MIN", "1");
  if (is_k_quant(t)) d.emplace_back("Q_SUPER", "1");
  d.emplace_back("Q_INTERLEAVE", std::to_string(block_interleave(caps)) + "u");
  return d;
}

}  // namespace ops

uint64_t block_weight_bytes(BlockType type, uint64_t rows, uint64_t cols) { return layout(type, rows, cols).words * 4; }

Buffer upload_blocks(Context& ctx, BlockType t, std::span<const uint8_t> blocks, uint32_t rows, uint32_t cols,
                     std::string_view name) {
  const uint32_t values = block_values(t);
  if (cols == 0 || cols % values || rows == 0)
    throw Error("upload_blocks: " + std::string(name) + " is [" + std::to_string(rows) + ", " + std::to_string(cols) +
                "]: its rows must be whole " + block_type_name(t) + " blocks of " + std::to_string(values));
  const Layout l = layout(t, rows, cols);
  const uint64_t count = uint64_t(rows) * (cols / values);  // llama.cpp's blocks
  if (blocks.size() != count * block_bytes(t))
    throw Error("upload_blocks: " + std::string(name) + " holds " + std::to_string(blocks.size()) + " bytes, not the " +
                std::to_string(count * block_bytes(t)) + " of " + std::to_string(count) + " " + block_type_name(t) +
                " blocks");
  std::vector<uint32_t> words(l.words, 0);
  const uint64_t nb = cols / values, group = ops::block_interleave(ctx.capabilities());
  for (uint64_t src = 0; src < count; ++src) {  // llama.cpp's order: row by row
    const uint64_t row = src / nb;
    const uint8_t* b = blocks.data() + src * block_bytes(t);
    // A scale (or minimum) that is infinite or not a number makes every value of its
    // block so: a damaged tensor, refused with its place.
    const uint16_t d = half_at(b + (t == BlockType::Q6_K ? 208 : 0));
    const bool bad_d = not_finite(d), bad_m = l.min && not_finite(half_at(b + 2));
    if (bad_d || bad_m)
      throw Error("upload_blocks: " + std::string(name) + ": block " + std::to_string(src % nb) + " of row " +
                  std::to_string(row) + " has a " + (bad_d ? "scale" : "minimum") + " that is infinite or not a number");
    if (l.super) {
      const uint64_t s = device_at(row, src % nb, rows, nb, group);
      if (t == BlockType::Q6_K) {
        std::memcpy(&words[l.scales_at + 4 * s], b + 192, 16);
        words[l.d_at + s / 2] |= uint32_t(d) << (16 * (s % 2));
      } else {
        std::memcpy(&words[l.scales_at + 4 * s], b, 16);  // d, dmin, the 12 bytes of scales
      }
      for (uint32_t u = 0; u < 8; ++u) {
        const uint64_t i = device_at(row, src % nb * 8 + u, rows, nb * 8, group);
        k_unit(t, b, u, &words[i * l.code_words], &words[l.qh_at + i * l.high_words]);
      }
      continue;
    }
    const uint64_t i = device_at(row, src % nb, rows, nb, group);
    const uint8_t* codes = b + (t == BlockType::Q8_0 ? 2 : t == BlockType::Q4_0 ? 2 : t == BlockType::Q4_1 ? 4
                                : t == BlockType::Q5_0 ? 6 : 8);
    std::memcpy(&words[i * l.code_words], codes, l.code_words * 4);  // little-endian words, as the device reads them
    if (l.high_words) words[l.qh_at + i] = device_qh(word_at(b + (l.min ? 4 : 2)));
    if (l.min) words[l.scales_at + i] = uint32_t(d) | uint32_t(half_at(b + 2)) << 16;
    else words[l.scales_at + i / 2] |= uint32_t(d) << (16 * (i % 2));
  }
  Buffer buffer = ctx.buffer(l.words * 4, name);
  ctx.upload(buffer, words.data(), l.words * 4);
  return buffer;
}

}  // namespace vkf
