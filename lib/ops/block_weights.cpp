// Weights in llama.cpp's blocks on the device (vkformer/tensor_io.hpp: upload_blocks):
// repacked from llama.cpp's 18-34-byte blocks into regions of 32-bit words that the
// kernels load 16 bytes at a time (shaders/blocks.glsl describes the layout; the two
// must agree, and tests/ops/gemm_blocks_test.cpp checks that they do).
#include <algorithm>
#include <cstring>

#include "block_weights.hpp"
#include "vkformer/tensor_io.hpp"

namespace vkf {

namespace {

struct Layout {
  uint32_t code_words;  // per block
  bool high_bit, min;
  uint64_t blocks, qh_at, scales_at, words;  // words from the buffer's start
};

uint64_t align4(uint64_t words) { return (words + 3) & ~uint64_t(3); }

Layout layout(BlockType t, uint64_t rows, uint64_t cols) {
  Layout l{.code_words = t == BlockType::Q8_0 ? 8u : 4u,
           .high_bit = t == BlockType::Q5_0 || t == BlockType::Q5_1,
           .min = t == BlockType::Q4_1 || t == BlockType::Q5_1,
           .blocks = rows * (cols / kBlockValues)};
  l.qh_at = align4(l.blocks * l.code_words);
  l.scales_at = l.high_bit ? align4(l.qh_at + l.blocks) : l.qh_at;
  l.words = align4(l.scales_at + (l.min ? l.blocks : (l.blocks + 1) / 2));
  return l;
}

uint32_t word_at(const uint8_t* b) { return uint32_t(b[0]) | uint32_t(b[1]) << 8 | uint32_t(b[2]) << 16 | uint32_t(b[3]) << 24; }
uint16_t half_at(const uint8_t* b) { return uint16_t(b[0] | b[1] << 8); }

}  // namespace

namespace ops {

uint32_t block_interleave(const Capabilities& caps) { return caps.type == DeviceType::Cpu ? 16 : 1; }

Defines block_defines(BlockType t, const Capabilities& caps) {
  Defines d = {{"QTYPE", std::to_string(uint32_t(t))},
               {"Q_CODE_WORDS", t == BlockType::Q8_0 ? "8" : "4"},
               {"Q_OFFSET", t == BlockType::Q4_0 ? "8.0" : t == BlockType::Q5_0 ? "16.0" : "0.0"}};
  if (t == BlockType::Q5_0 || t == BlockType::Q5_1) d.emplace_back("Q_HIGH_BIT", "1");
  if (t == BlockType::Q4_1 || t == BlockType::Q5_1) d.emplace_back("Q_MIN", "1");
  d.emplace_back("Q_INTERLEAVE", std::to_string(block_interleave(caps)) + "u");
  return d;
}

}  // namespace ops

uint64_t block_weight_bytes(BlockType type, uint64_t rows, uint64_t cols) { return layout(type, rows, cols).words * 4; }

Buffer upload_blocks(Context& ctx, BlockType t, std::span<const uint8_t> blocks, uint32_t rows, uint32_t cols,
                     std::string_view name) {
  if (cols == 0 || cols % kBlockValues || rows == 0)
    throw Error("upload_blocks: " + std::string(name) + " is [" + std::to_string(rows) + ", " + std::to_string(cols) +
                "]: its rows must be whole blocks of " + std::to_string(kBlockValues));
  const Layout l = layout(t, rows, cols);
  if (blocks.size() != l.blocks * block_bytes(t))
    throw Error("upload_blocks: " + std::string(name) + " holds " + std::to_string(blocks.size()) + " bytes, not the " +
                std::to_string(l.blocks * block_bytes(t)) + " of " + std::to_string(l.blocks) + " " +
                block_type_name(t) + " blocks");
  std::vector<uint32_t> words(l.words, 0);
  const uint64_t nb = cols / kBlockValues, group = ops::block_interleave(ctx.capabilities());
  for (uint64_t src = 0; src < l.blocks; ++src) {  // llama.cpp's order: row by row
    // Its place on the device (blocks.glsl: block_at): row groups, by block, then row.
    const uint64_t row = src / nb, first = row - row % group;
    const uint64_t i = first * nb + src % nb * std::min<uint64_t>(group, rows - first) + (row - first);
    const uint8_t* b = blocks.data() + src * block_bytes(t);
    const uint16_t d = half_at(b);
    // A scale (or minimum) that is infinite or not a number makes every value of its
    // block so: a damaged tensor, refused with its place.
    const bool has_min = t == BlockType::Q4_1 || t == BlockType::Q5_1;
    if ((d & 0x7C00) == 0x7C00 || (has_min && (half_at(b + 2) & 0x7C00) == 0x7C00))
      throw Error("upload_blocks: " + std::string(name) + ": block " + std::to_string(src % nb) + " of row " +
                  std::to_string(src / nb) + " has a " + ((d & 0x7C00) == 0x7C00 ? "scale" : "minimum") +
                  " that is infinite or not a number");
    const uint8_t* codes = b + (t == BlockType::Q8_0 ? 2 : t == BlockType::Q4_0 ? 2 : t == BlockType::Q4_1 ? 4
                                : t == BlockType::Q5_0 ? 6 : 8);
    std::memcpy(&words[i * l.code_words], codes, l.code_words * 4);  // little-endian words, as the device reads them
    if (l.high_bit) words[l.qh_at + i] = word_at(b + (l.min ? 4 : 2));
    if (l.min) words[l.scales_at + i] = uint32_t(d) | uint32_t(half_at(b + 2)) << 16;
    else words[l.scales_at + i / 2] |= uint32_t(d) << (16 * (i % 2));
  }
  Buffer buffer = ctx.buffer(l.words * 4, name);
  ctx.upload(buffer, words.data(), l.words * 4);
  return buffer;
}

}  // namespace vkf
