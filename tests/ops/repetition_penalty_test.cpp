// transformers' repetition penalty against a CPU reference: seen tokens' logits divided
// by the penalty when positive, multiplied when negative, the others untouched; each
// row's input token penalised and added to its bitmap. The result is one fp32 multiply
// or divide of the stored logit (SPIR-V's division is within 2.5 ulp): 1e-6 relative in
// fp32; fp16 storage rounds the result once more: 1e-3.
#include <cmath>

#include "support/ops_test.hpp"

namespace vkf::test {
namespace {

class RepetitionPenaltyTest : public OpsTest {};

TEST_P(RepetitionPenaltyTest, SeenTokensAndEachRowsInputArePenalised) {
  auto seed = test_seed();
  VKF_SEED_TRACE(seed);
  std::mt19937_64 rng(seed);
  for (uint32_t cols : {1u, 3u, 17u, 255u, 1000u, 50257u})
    for (float penalty : {1.3f, 0.7f}) {
      const uint32_t rows = 3, words = Ops::repetition_penalty_words(cols);
      auto x = random_values(size_t(rows) * cols, rng, -20, 20);
      for (auto& e : x) e = stored(e, dtype());
      std::vector<uint32_t> seen(size_t(rows) * words, 0), ids(rows);
      std::uniform_int_distribution<uint32_t> token(0, cols - 1);
      for (uint32_t r = 0; r < rows; ++r) {
        for (int k = 0; k < 5; ++k) {  // a few seen tokens per row, row 2 none
          if (r == 2) break;
          const uint32_t v = token(rng);
          seen[r * words + v / 32] |= 1u << (v % 32);
        }
        ids[r] = token(rng);
      }
      Buffer bx = upload_as(ctx(), x, dtype(), "logits"), bs = upload_u32(ctx(), seen, "seen");
      Buffer bi = upload_u32(ctx(), ids, "ids");
      auto cl = ctx().command_list();
      ops().repetition_penalty(cl, bx.view(), bs.view(), bi.view(), rows, cols, penalty);
      cl.submit();
      const auto got = download_as(ctx(), bx, x.size(), dtype());
      const auto seen_after = download_u32(ctx(), bs, seen.size());
      for (uint32_t r = 0; r < rows; ++r) {
        auto want_seen = std::vector<uint32_t>(seen.begin() + r * words, seen.begin() + (r + 1) * words);
        want_seen[ids[r] / 32] |= 1u << (ids[r] % 32);
        EXPECT_EQ(std::vector<uint32_t>(seen_after.begin() + r * words, seen_after.begin() + (r + 1) * words), want_seen)
            << "row " << r << " cols " << cols;
        for (uint32_t v = 0; v < cols; ++v) {
          const double l = x[size_t(r) * cols + v];
          const bool repeated = (want_seen[v / 32] >> (v % 32)) & 1u;
          const double want = repeated ? (l < 0 ? l * double(penalty) : l / double(penalty)) : l;
          const double tol = (dtype() == DType::F16 ? 1e-3 : 1e-6) * std::fabs(want) + 1e-30;
          ASSERT_NEAR(got[size_t(r) * cols + v], want, tol) << "row " << r << " token " << v << " cols " << cols;
        }
      }
    }
}

TEST_P(RepetitionPenaltyTest, BadArgumentsAreClearErrors) {
  Buffer b = ctx().buffer(64);
  auto cl = ctx().command_list();
  Ops o = ops();
  EXPECT_THROW(o.repetition_penalty(cl, b.view(), b.view(), b.view(), 0, 4, 1.2f), Error);
  EXPECT_THROW(o.repetition_penalty(cl, b.view(), b.view(), b.view(), 1, 4, 0.0f), Error);
  EXPECT_THROW(o.repetition_penalty(cl, b.view(), b.view(), b.view(), 1, 4, NAN), Error);
  EXPECT_THROW(o.repetition_penalty(cl, b.view(), b.view(), b.view(), 4, 1000, 1.2f), Error);  // logits too small
  cl.submit();
}

VKF_FOR_EACH_DTYPE(RepetitionPenaltyTest);

}  // namespace
}  // namespace vkf::test
