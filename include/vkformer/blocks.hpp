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
// and llama.cpp's K-quants, 256 values a super-block of 32- or 16-value sub-blocks, each
// sub-block's scale (and minimum) a 6- or 8-bit multiple of the super-block's fp16 ones:
//   Q4_K 144 bytes: d, dmin; 12 bytes of 6-bit (sc, m) per 32; 128 bytes of codes, each
//        64 values' 32 bytes holding the first 32 in low nibbles, the next in high
//                                                         x = (d sc) q - (dmin m)
//   Q5_K 176 bytes: d, dmin; scales as Q4_K; 32 bytes qh (byte l bit 2i, 2i + 1: the fifth
//        bits of values 64i + l, 64i + 32 + l); codes' low nibbles as Q4_K
//                                                         x = (d sc) q - (dmin m)
//   Q6_K 210 bytes: 128 bytes of low nibbles, 64 of high 2-bit pairs, 16 int8 scales (one
//        per 16 values), d                                x = (d sc) (q - 32)
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace vkf {

enum class BlockType : uint8_t { Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K };
inline constexpr BlockType kBlockTypes[] = {BlockType::Q8_0, BlockType::Q4_0, BlockType::Q4_1, BlockType::Q5_0,
                                            BlockType::Q5_1, BlockType::Q4_K, BlockType::Q5_K, BlockType::Q6_K};
// Values per block of the 32-value types, and per sub-block unit every kernel reads (a
// K-quant's super-block is 8 of them).
inline constexpr uint32_t kBlockValues = 32;
inline constexpr uint32_t kSuperBlockValues = 256;

const char* block_type_name(BlockType t);  // "q8_0", ...
std::optional<BlockType> block_type_from_name(const std::string& name);
bool is_k_quant(BlockType t);
uint32_t block_values(BlockType t);  // 32, or 256 (K-quants)
uint32_t block_bytes(BlockType t);   // 34, 18, 20, 22, 24, 144, 176, 210
// Bits a value takes, scales included: 8.5, 4.5, 5, 5.5, 6, 4.5, 5.5, 6.5625.
double block_bits_per_value(BlockType t);
// The type a row of `cols` values is stored in when `t` is asked for: t itself if the
// row is whole blocks of it; else llama.cpp's fallback (Q4_K -> Q5_0, Q5_K -> Q5_1,
// Q6_K -> Q8_0) if the row is whole 32-value blocks; else none (the model's precision).
std::optional<BlockType> block_type_for_row(BlockType t, uint64_t cols);

// llama.cpp's reference quantization (no importance matrix) of `values`, a whole number
// of blocks, in its byte layout. A value that is not finite is an Error naming the block.
std::vector<uint8_t> quantize_blocks(BlockType t, std::span<const float> values);
// The values blocks stand for, as fp32: d and m from fp16, products in fp32.
std::vector<float> dequantize_blocks(BlockType t, std::span<const uint8_t> blocks);

// llama.cpp's mixes (llama-quantize's Q4_K_M and Q5_K_M): the base K-quant for most
// linear weights, Q6_K for those whose error costs most. docs/models.md states the rule.
enum class BlockMix : uint8_t { Q4_K_M, Q5_K_M };
const char* block_mix_name(BlockMix m);  // "q4_k_m", "q5_k_m"
std::optional<BlockMix> block_mix_from_name(const std::string& name);
// What a weight is to llama.cpp's rule (its GGUF tensor name's kind), and where it lies.
enum class WeightRole : uint8_t {
  TokenEmbedding, Output, AttentionQ, AttentionK, AttentionV, AttentionQKV, AttentionOutput, FfnGate, FfnUp, FfnDown
};
struct WeightPlace {
  WeightRole role;
  uint32_t layer = 0, layers = 1;  // the weight's layer of the model's (decoder) layers
  bool tied = false;               // a token embedding that is also the output projection
};
// The mix's type for that weight in rows of `cols` values, fallbacks applied (none: the
// rows are not whole 32-value blocks, so the weight stays in the model's precision).
std::optional<BlockType> mix_block_type(BlockMix mix, const WeightPlace& w, uint64_t cols);

}  // namespace vkf
