#pragma once
// Host floats to and from device buffers in a storage type: fp16 is rounded to nearest
// even on the way up (vkformer/half.hpp), as every fp16 kernel input is.
#include <span>
#include <string_view>
#include <vector>

#include "vkformer/blocks.hpp"
#include "vkformer/ops.hpp"

namespace vkf {

// A fresh buffer holding `values` as `type` (never empty: at least one element).
Buffer upload_floats(Context& ctx, std::span<const float> values, DType type, std::string_view name);
// The first `count` elements of a buffer of `type`, as floats.
std::vector<float> download_floats(Context& ctx, const Buffer& buffer, size_t count, DType type);

// A Linear weight [rows, cols] in llama.cpp's blocks (vkformer/blocks.hpp: rows x cols /
// 32 blocks, row by row, in its byte layout) as the kernels read it (Gemm::b_blocks):
// repacked into codes, fifth bits and scales, each region on 16 bytes (shaders/blocks.glsl).
// cols must be a multiple of 32.
Buffer upload_blocks(Context& ctx, BlockType type, std::span<const uint8_t> blocks, uint32_t rows, uint32_t cols,
                     std::string_view name);
// The device bytes of such a weight.
uint64_t block_weight_bytes(BlockType type, uint64_t rows, uint64_t cols);

}  // namespace vkf
