#pragma once
// Weights in llama.cpp's blocks (GGUF's ggml_types), as vkformer stores them: 32 values
// a block, each block a scale (and a minimum), in fp16, and the values' codes. The byte
// layouts are llama.cpp's, so a GGUF file's tensors are read as they are and our
// quantizer can be checked against theirs:
//   Q8_0  34 bytes: d; 32 int8 codes q                  x = d q
//   Q4_0  18 bytes: d; 16 bytes, code j in byte j's low nibble and code j + 16 in its
//         high nibble                                     x = d (q - 8)
//   Q4_1  20 bytes: d, m; codes as Q4_0                   x = d q + m
//   Q5_0  22 bytes: d; 4 bytes qh (bit j: code j's fifth bit); codes' low nibbles as
//         Q4_0                                            x = d (q - 16)
//   Q5_1  24 bytes: d, m; qh; low nibbles as Q4_0         x = d q + m
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace vkf {

enum class BlockType : uint8_t { Q8_0, Q4_0, Q4_1, Q5_0, Q5_1 };
inline constexpr BlockType kBlockTypes[] = {BlockType::Q8_0, BlockType::Q4_0, BlockType::Q4_1, BlockType::Q5_0,
                                            BlockType::Q5_1};
inline constexpr uint32_t kBlockValues = 32;  // values per block, every type here

const char* block_type_name(BlockType t);  // "q8_0", ...
std::optional<BlockType> block_type_from_name(const std::string& name);
uint32_t block_bytes(BlockType t);  // 34, 18, 20, 22, 24
// Bits a value takes, scales included: 8.5, 4.5, 5, 5.5, 6.
double block_bits_per_value(BlockType t);

// llama.cpp's reference quantization (no importance matrix) of `values`, a whole number
// of blocks, in its byte layout. A value that is not finite is an Error naming the block.
std::vector<uint8_t> quantize_blocks(BlockType t, std::span<const float> values);
// The values blocks stand for, as fp32: d and m from fp16, products in fp32.
std::vector<float> dequantize_blocks(BlockType t, std::span<const uint8_t> blocks);

}  // namespace vkf
