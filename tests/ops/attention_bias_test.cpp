// The rules behind AttentionBias tables against transformers (tools/attention_bias_references/
// make_attention_bias_references.py): T5's relative-position buckets, bucket for bucket
// over relative positions -1200..1200 (encoder and decoder, three settings), and ALiBi's
// slopes for 1 to 40 heads (fp32, within an ulp: torch raises the base in its own pow).
// The kernels that read the tables: attention_test and decode_attention_test.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "vkformer/error.hpp"
#include "vkformer/ops.hpp"

namespace vkf::test {
namespace {

const nlohmann::json& references() {
  static const nlohmann::json refs = [] {
    std::ifstream f(std::string(VKF_OPS_SOURCE_DIR) + "/attention_bias_references.json");
    return nlohmann::json::parse(f);
  }();
  return refs;
}

TEST(AttentionBias, T5BucketsAsTransformersBinsThem) {
  size_t checked = 0;
  for (const auto& r : references()["t5"]) {
    const uint32_t n = r["num_buckets"], distance = r["max_distance"];
    const bool bidirectional = r["bidirectional"];
    const int64_t first = r["first"];
    SCOPED_TRACE(std::to_string(n) + " buckets, max_distance " + std::to_string(distance) +
                 (bidirectional ? ", bidirectional" : ""));
    const auto want = r["buckets"].get<std::vector<uint32_t>>();
    for (size_t i = 0; i < want.size(); ++i) {
      ASSERT_EQ(t5_relative_bucket(first + int64_t(i), bidirectional, n, distance), want[i])
          << "relative position " << first + int64_t(i);
      ++checked;
    }
  }
  EXPECT_EQ(checked, 6u * 2401);
}

// The table over positions [0, P): column origin + (j - p) holds the learned bias of
// (j - p)'s bucket, head by head; a bias of the wrong size is refused.
TEST(AttentionBias, T5TableLaysEachHeadsBucketsByRelativePosition) {
  const uint32_t heads = 3, buckets = 8, P = 40;
  std::vector<float> learned(buckets * heads);
  for (size_t i = 0; i < learned.size(); ++i) learned[i] = float(i) * 0.25f - 1.0f;
  const auto table = t5_relative_bias_table(learned, heads, true, buckets, 20, P);
  ASSERT_EQ(table.size(), size_t(heads) * (2 * P - 1));
  for (uint32_t h = 0; h < heads; ++h)
    for (int64_t rel = -int64_t(P) + 1; rel < int64_t(P); ++rel)
      EXPECT_EQ(table[h * (2 * P - 1) + (P - 1) + rel], learned[t5_relative_bucket(rel, true, buckets, 20) * heads + h]);
  EXPECT_THROW(t5_relative_bias_table(std::vector<float>(5), heads, true, buckets, 20, P), Error);
  EXPECT_THROW(t5_relative_bucket(3, true, 2, 20), Error);
}

TEST(AttentionBias, AlibiSlopesAsBloomsAndItsTable) {
  for (const auto& [heads, want] : references()["alibi"].items()) {
    SCOPED_TRACE(heads + " heads");
    const auto got = alibi_slopes(uint32_t(std::stoul(heads)));
    ASSERT_EQ(got.size(), want.size());
    for (size_t h = 0; h < got.size(); ++h) {
      const double w = want[h].get<double>();
      EXPECT_NEAR(got[h], w, std::ldexp(std::abs(w), -23)) << "head " << h;
    }
  }
  const auto table = alibi_bias_table(5, 7);  // [5, 13], origin 6: slope_h x (j - p)
  const auto slopes = alibi_slopes(5);
  for (uint32_t h = 0; h < 5; ++h)
    for (int rel = -6; rel <= 6; ++rel) EXPECT_EQ(table[h * 13 + 6 + rel], slopes[h] * float(rel));
  EXPECT_THROW(alibi_slopes(0), Error);
}

}  // namespace
}  // namespace vkf::test
