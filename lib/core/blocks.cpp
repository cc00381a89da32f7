// llama.cpp's block types (vkformer/blocks.hpp): the reference quantizers as its
// ggml-quants.c and the gguf package's quants.py define them (no importance matrix), and
// their dequantization. Each step is written as those are, multiply then add, so that
// the blocks are byte-identical to theirs (tests/ops/blocks_test.cpp).
#include "vkformer/blocks.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <thread>

#include "k_quants.hpp"
#include "vkformer/error.hpp"
#include "vkformer/half.hpp"

namespace vkf {

namespace {

struct Scale {
  float d, m;
};

void put_half(uint8_t* at, float v) {
  const uint16_t h = float_to_half(v);
  at[0] = uint8_t(h), at[1] = uint8_t(h >> 8);
}
float get_half(const uint8_t* at) { return half_to_float(uint16_t(at[0] | at[1] << 8)); }

// Round half away from zero, as C's roundf.
float round_away(float v) { return std::copysign(std::floor(std::fabs(v) + 0.5f), v); }

// The value of largest magnitude, the first of equals (its sign kept: Q4_0 and Q5_0
// scale by it so that it maps to the end of the range).
float signed_max(const float* x) {
  float amax = 0, max = 0;
  for (uint32_t j = 0; j < kBlockValues; ++j)
    if (amax < std::fabs(x[j])) amax = std::fabs(x[j]), max = x[j];
  return max;
}

// 4- and 5-bit codes into llama.cpp's bytes: low nibbles of codes j and j + 16 in byte j;
// the fifth bits (5-bit types) in qh.
void pack_nibbles(const uint8_t* q, uint8_t* qs) {
  for (uint32_t j = 0; j < kBlockValues / 2; ++j) qs[j] = uint8_t((q[j] & 0x0F) | (q[j + kBlockValues / 2] << 4));
}
void pack_high_bits(const uint8_t* q, uint8_t* qh) {
  uint32_t bits = 0;
  for (uint32_t j = 0; j < kBlockValues; ++j) bits |= uint32_t((q[j] >> 4) & 1) << j;
  for (int b = 0; b < 4; ++b) qh[b] = uint8_t(bits >> (8 * b));
}
uint8_t code(const uint8_t* qs, const uint8_t* qh, uint32_t j) {
  const uint8_t low = j < kBlockValues / 2 ? qs[j] & 0x0F : qs[j - kBlockValues / 2] >> 4;
  if (!qh) return low;
  const uint32_t bits = uint32_t(qh[0]) | uint32_t(qh[1]) << 8 | uint32_t(qh[2]) << 16 | uint32_t(qh[3]) << 24;
  return uint8_t(low | ((bits >> j) & 1) << 4);
}

// A code from x * id + offset (or (x - min) * id + offset), truncated and clamped to [0, top].
uint8_t truncated(float scaled, float offset, int top) {
  const float v = scaled + offset;
  return uint8_t(std::clamp(int(std::trunc(v)), 0, top));
}

void quantize_block(BlockType t, const float* x, uint8_t* out) {
  uint8_t q[kBlockValues];
  switch (t) {
    case BlockType::Q4_K:
    case BlockType::Q5_K:
    case BlockType::Q6_K: return k_quants::quantize(t, x, out);
    case BlockType::Q8_0: {
      float amax = 0;
      for (uint32_t j = 0; j < kBlockValues; ++j) amax = std::max(amax, std::fabs(x[j]));
      const float d = amax / 127, id = d != 0 ? 1.0f / d : 0.0f;
      put_half(out, d);
      for (uint32_t j = 0; j < kBlockValues; ++j) out[2 + j] = uint8_t(int8_t(round_away(x[j] * id)));
      return;
    }
    case BlockType::Q4_0:
    case BlockType::Q5_0: {
      const bool five = t == BlockType::Q5_0;
      const float d = signed_max(x) / (five ? -16.0f : -8.0f), id = d != 0 ? 1.0f / d : 0.0f;
      for (uint32_t j = 0; j < kBlockValues; ++j) q[j] = truncated(x[j] * id, five ? 16.5f : 8.5f, five ? 31 : 15);
      put_half(out, d);
      if (five) pack_high_bits(q, out + 2);
      pack_nibbles(q, out + (five ? 6 : 2));
      return;
    }
    case BlockType::Q4_1:
    case BlockType::Q5_1: {
      const bool five = t == BlockType::Q5_1;
      float min = x[0], max = x[0];
      for (uint32_t j = 1; j < kBlockValues; ++j) min = std::min(min, x[j]), max = std::max(max, x[j]);
      const float d = (max - min) / (five ? 31.0f : 15.0f), id = d != 0 ? 1.0f / d : 0.0f;
      for (uint32_t j = 0; j < kBlockValues; ++j) q[j] = truncated((x[j] - min) * id, 0.5f, five ? 31 : 15);
      put_half(out, d);
      put_half(out + 2, min);
      if (five) pack_high_bits(q, out + 4);
      pack_nibbles(q, out + (five ? 8 : 4));
      return;
    }
  }
}

void dequantize_block(BlockType t, const uint8_t* b, float* x) {
  if (is_k_quant(t)) return k_quants::dequantize(t, b, x);
  const float d = get_half(b);
  switch (t) {
    case BlockType::Q4_K:
    case BlockType::Q5_K:
    case BlockType::Q6_K: return;
    case BlockType::Q8_0:
      for (uint32_t j = 0; j < kBlockValues; ++j) x[j] = float(int8_t(b[2 + j])) * d;
      return;
    case BlockType::Q4_0:
      for (uint32_t j = 0; j < kBlockValues; ++j) x[j] = d * float(int(code(b + 2, nullptr, j)) - 8);
      return;
    case BlockType::Q5_0:
      for (uint32_t j = 0; j < kBlockValues; ++j) x[j] = d * float(int(code(b + 6, b + 2, j)) - 16);
      return;
    case BlockType::Q4_1: {
      const float m = get_half(b + 2);
      for (uint32_t j = 0; j < kBlockValues; ++j) x[j] = d * float(code(b + 4, nullptr, j)) + m;
      return;
    }
    case BlockType::Q5_1: {
      const float m = get_half(b + 2);
      for (uint32_t j = 0; j < kBlockValues; ++j) x[j] = d * float(code(b + 8, b + 4, j)) + m;
      return;
    }
  }
}

}  // namespace

const char* block_type_name(BlockType t) {
  switch (t) {
    case BlockType::Q8_0: return "q8_0";
    case BlockType::Q4_0: return "q4_0";
    case BlockType::Q4_1: return "q4_1";
    case BlockType::Q5_0: return "q5_0";
    case BlockType::Q5_1: return "q5_1";
    case BlockType::Q4_K: return "q4_k";
    case BlockType::Q5_K: return "q5_k";
    case BlockType::Q6_K: return "q6_k";
  }
  return "?";
}

bool is_k_quant(BlockType t) { return t == BlockType::Q4_K || t == BlockType::Q5_K || t == BlockType::Q6_K; }

uint32_t block_values(BlockType t) { return is_k_quant(t) ? kSuperBlockValues : kBlockValues; }

std::optional<BlockType> block_type_for_row(BlockType t, uint64_t cols) {
  if (cols == 0 || cols % kBlockValues) return std::nullopt;
  if (cols % block_values(t) == 0) return t;
  switch (t) {
    case BlockType::Q4_K: return BlockType::Q5_0;
    case BlockType::Q5_K: return BlockType::Q5_1;
    case BlockType::Q6_K: return BlockType::Q8_0;
    default: return t;
  }
}

std::optional<BlockType> block_type_from_name(const std::string& name) {
  for (BlockType t : kBlockTypes)
    if (name == block_type_name(t)) return t;
  return std::nullopt;
}

uint32_t block_bytes(BlockType t) {
  switch (t) {
    case BlockType::Q8_0: return 34;
    case BlockType::Q4_0: return 18;
    case BlockType::Q4_1: return 20;
    case BlockType::Q5_0: return 22;
    case BlockType::Q5_1: return 24;
    case BlockType::Q4_K: return 144;
    case BlockType::Q5_K: return 176;
    case BlockType::Q6_K: return 210;
  }
  return 0;
}

double block_bits_per_value(BlockType t) { return block_bytes(t) * 8.0 / block_values(t); }

std::vector<uint8_t> quantize_blocks(BlockType t, std::span<const float> values) {
  const uint32_t n = block_values(t);
  if (values.size() % n)
    throw Error(std::string(block_type_name(t)) + ": " + std::to_string(values.size()) +
                " values are not a whole number of blocks of " + std::to_string(n));
  const size_t blocks = values.size() / n;
  std::vector<uint8_t> out(blocks * block_bytes(t));
  for (size_t i = 0; i < blocks; ++i) {
    const float* x = values.data() + i * n;
    for (uint32_t j = 0; j < n; ++j)
      if (!std::isfinite(x[j]))
        throw Error(std::string(block_type_name(t)) + ": value " + std::to_string(i * n + j) +
                    " (block " + std::to_string(i) + ") is not finite");
  }
  // The blocks are independent: large weights are quantized on every core (a K-quant's
  // scale search costs a few hundred operations a value).
  const size_t threads = std::clamp<size_t>(std::thread::hardware_concurrency(), 1, 16);
  const size_t per = std::max<size_t>((blocks + threads - 1) / threads, size_t(1) << 16 >> (n == 32 ? 0 : 3));
  std::vector<std::thread> pool;
  auto run = [&](size_t from, size_t to) {
    for (size_t i = from; i < to; ++i) quantize_block(t, values.data() + i * n, out.data() + i * block_bytes(t));
  };
  for (size_t from = per; from < blocks; from += per) pool.emplace_back(run, from, std::min(blocks, from + per));
  run(0, std::min(blocks, per));
  for (std::thread& th : pool) th.join();
  return out;
}

std::vector<float> dequantize_blocks(BlockType t, std::span<const uint8_t> blocks) {
  if (blocks.size() % block_bytes(t))
    throw Error(std::string(block_type_name(t)) + ": " + std::to_string(blocks.size()) +
                " bytes are not a whole number of " + std::to_string(block_bytes(t)) + "-byte blocks");
  const size_t n = blocks.size() / block_bytes(t), values = block_values(t);
  std::vector<float> out(n * values);
  for (size_t i = 0; i < n; ++i) dequantize_block(t, blocks.data() + i * block_bytes(t), out.data() + i * values);
  return out;
}

const char* block_mix_name(BlockMix m) { return m == BlockMix::Q4_K_M ? "q4_k_m" : "q5_k_m"; }

std::optional<BlockMix> block_mix_from_name(const std::string& name) {
  for (BlockMix m : {BlockMix::Q4_K_M, BlockMix::Q5_K_M})
    if (name == block_mix_name(m)) return m;
  return std::nullopt;
}

// llama-quantize's choice (src/llama-quant.cpp, no importance matrix, a model without
// experts that is not Falcon or a 70B): the output projection (or a tied embedding) in
// Q6_K, or Q8_0 when its rows are not whole super-blocks; a fused QKV one step up from
// the base; V and the FFN's down projection in Q6_K in the first eighth of the layers,
// the last eighth, and every third layer between; the rest in the base. Then the
// fallback for rows that are not whole super-blocks.
std::optional<BlockType> mix_block_type(BlockMix mix, const WeightPlace& w, uint64_t cols) {
  const BlockType base = mix == BlockMix::Q4_K_M ? BlockType::Q4_K : BlockType::Q5_K;
  const int i = int(w.layer), n = int(w.layers);
  const bool more_bits = i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2;
  BlockType t = base;
  switch (w.role) {
    case WeightRole::Output:
    case WeightRole::TokenEmbedding:
      if (w.role == WeightRole::Output || w.tied) t = cols % kSuperBlockValues ? BlockType::Q8_0 : BlockType::Q6_K;
      break;
    case WeightRole::AttentionQKV: t = mix == BlockMix::Q4_K_M ? BlockType::Q5_K : BlockType::Q6_K; break;
    case WeightRole::AttentionV:
    case WeightRole::FfnDown:
      if (more_bits) t = BlockType::Q6_K;
      break;
    default: break;
  }
  return block_type_for_row(t, cols);
}

}  // namespace vkf
