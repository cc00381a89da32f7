#pragma once
// llama.cpp's K-quants, one 256-value super-block at a time (lib/core/k_quants.cpp);
// vkformer/blocks.hpp's quantize_blocks and dequantize_blocks call these.
#include <cstdint>

#include "vkformer/blocks.hpp"

namespace vkf::k_quants {

// Sub-block j's scale and minimum (Q4_K, Q5_K: 32 values, d sc and -(dmin m); Q6_K: 16
// values, d sc and 0): value = d q + m, q the code less Q6_K's 32.
struct SubScale {
  float d, m;
};
SubScale sub_scale(BlockType t, const uint8_t* block, int j);
// Code i (0 .. 255) of the super-block, unsigned (Q6_K's still plus 32).
uint8_t code(BlockType t, const uint8_t* block, int i);

void quantize(BlockType t, const float* x, uint8_t* out);
void dequantize(BlockType t, const uint8_t* block, float* x);

}  // namespace vkf::k_quants
