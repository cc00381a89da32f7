// The rules behind an AttentionBias table (T5's buckets, ALiBi's slopes), as transformers
// computes them, and the check every attention kernel makes of a table.
#include "attention_bias.hpp"

#include <algorithm>
#include <bit>
#include <cmath>

namespace vkf {

uint32_t t5_relative_bucket(int64_t relative_position, bool bidirectional, uint32_t num_buckets,
                            uint32_t max_distance) {
  if (num_buckets < (bidirectional ? 4u : 2u) || max_distance < 1)
    throw Error("t5_relative_bucket: num_buckets must be at least " + std::string(bidirectional ? "4" : "2") +
                " and max_distance at least 1");
  uint32_t bucket = 0;
  int64_t distance;
  if (bidirectional) {
    num_buckets /= 2;
    if (relative_position > 0) bucket += num_buckets;  // later keys: the upper half
    distance = relative_position < 0 ? -relative_position : relative_position;
  } else {
    distance = relative_position < 0 ? -relative_position : 0;  // later keys: bucket 0
  }
  const uint32_t max_exact = num_buckets / 2;
  if (distance < int64_t(max_exact)) return bucket + uint32_t(distance);
  // Logarithmic bins up to max_distance, in fp32 as torch computes them (the tensor's
  // float over max_exact, its log, over the double log(max_distance / max_exact) taken to
  // fp32, times the bins), truncated toward zero, then clamped to the last bucket.
  const float ratio = float(distance) / float(max_exact);
  const float scaled = std::log(ratio) / float(std::log(double(max_distance) / double(max_exact))) *
                       float(num_buckets - max_exact);
  const int64_t large = int64_t(max_exact) + int64_t(scaled);
  return bucket + uint32_t(std::min<int64_t>(large, num_buckets - 1));
}

std::vector<float> t5_relative_bias_table(const std::vector<float>& buckets, uint32_t heads, bool bidirectional,
                                          uint32_t num_buckets, uint32_t max_distance, uint32_t max_positions) {
  if (!heads || !max_positions || max_positions > (1u << 20))
    throw Error("t5_relative_bias_table: heads must be at least 1 and max_positions in [1, 2^20]");
  if (buckets.size() != uint64_t(num_buckets) * heads)
    throw Error("t5_relative_bias_table: the bias holds " + std::to_string(buckets.size()) + " values, not " +
                std::to_string(num_buckets) + " buckets x " + std::to_string(heads) + " heads");
  const uint32_t positions = 2 * max_positions - 1, origin = max_positions - 1;
  std::vector<float> table(uint64_t(heads) * positions);
  for (uint32_t c = 0; c < positions; ++c) {
    const uint32_t bucket = t5_relative_bucket(int64_t(c) - origin, bidirectional, num_buckets, max_distance);
    for (uint32_t h = 0; h < heads; ++h) table[uint64_t(h) * positions + c] = buckets[uint64_t(bucket) * heads + h];
  }
  return table;
}

std::vector<float> alibi_slopes(uint32_t heads) {
  if (!heads || heads > (1u << 16)) throw Error("alibi_slopes: heads must be in [1, 65536]");
  const uint32_t n = std::bit_floor(heads);
  // 2^(-8 / n) in double, then fp32 (a tensor's), raised to integer powers in fp32.
  const auto base = [](uint32_t m) { return float(std::pow(2.0, -std::pow(2.0, -(std::log2(double(m)) - 3)))); };
  std::vector<float> slopes;
  for (uint32_t p = 1; p <= n; ++p) slopes.push_back(std::pow(base(n), float(p)));
  for (uint32_t p = 1, extra = std::min(n, heads - n); p < 1 + 2 * extra; p += 2) slopes.push_back(std::pow(base(2 * n), float(p)));
  return slopes;
}

std::vector<float> alibi_bias_table(uint32_t heads, uint32_t max_positions) {
  if (!max_positions || max_positions > (1u << 20)) throw Error("alibi_bias_table: max_positions must be in [1, 2^20]");
  const std::vector<float> slopes = alibi_slopes(heads);
  const uint32_t positions = 2 * max_positions - 1, origin = max_positions - 1;
  std::vector<float> table(uint64_t(heads) * positions);
  for (uint32_t h = 0; h < heads; ++h)
    for (uint32_t c = 0; c < positions; ++c) table[uint64_t(h) * positions + c] = slopes[h] * float(int64_t(c) - origin);
  return table;
}

namespace ops {

void check_attention_bias(const AttentionBias& b, uint32_t heads, uint64_t last_query, uint32_t kv_len, const char* op) {
  const std::string o(op);
  if (b.origin >= b.positions)
    throw Error(o + ": the position bias's origin " + std::to_string(b.origin) + " is outside its " +
                std::to_string(b.positions) + " positions");
  if (last_query > b.origin || uint64_t(kv_len) > uint64_t(b.positions) - b.origin)
    throw Error(o + ": the position bias covers relative positions [-" + std::to_string(b.origin) + ", " +
                std::to_string(b.positions - b.origin) + "), not queries up to position " + std::to_string(last_query) +
                " over " + std::to_string(kv_len) + " keys");
  if (b.table.size < uint64_t(heads) * b.positions * 4)
    throw Error(o + ": the position bias table holds " + std::to_string(b.table.size) + " bytes, less than " +
                std::to_string(heads) + " heads x " + std::to_string(b.positions) + " positions of fp32");
}

}  // namespace ops
}  // namespace vkf
