// Softmax against a double reference. Tolerance: each output is exp(x - max) / sum in
// fp32: a few ulps of the exponent's argument (|x - max| up to ~20 here, error ~20 *
// 2^-24 ≈ 1.2e-6 relative) plus the sum's rounding; 1e-5 of |y| covers both. fp16
// storage rounds inputs before the reference sees them and outputs once: 1e-3 of |y|.
// An absolute 1e-7 (fp32) / 6e-8 (fp16 subnormal spacing) covers outputs near zero.
#include "support/ops_test.hpp"
#include "ops/reference.hpp"

namespace vkf::test {
namespace {

class SoftmaxTest : public OpsTest {
 protected:
  void check(const Softmax& s, double lo, double hi, bool with_mask, std::mt19937_64& rng) {
    SCOPED_TRACE("rows=" + std::to_string(s.rows) + " cols=" + std::to_string(s.cols));
    auto x = random_values(size_t(s.rows) * s.cols, rng, lo, hi);
    auto mask = random_values(size_t(s.mask_rows) * s.cols, rng, -2, 2);
    for (size_t i = 0; i < mask.size(); i += 3) mask[i] = -INFINITY;  // some masked entries
    for (auto* v : {&x, &mask})
      for (auto& e : *v) e = stored(e, dtype());
    auto want = ref::softmax(s, x, with_mask ? &mask : nullptr);
    Buffer bx = upload_as(ctx(), x, dtype(), "x"), bm = upload_as(ctx(), mask, dtype(), "mask");
    Buffer by = poisoned(ctx(), want.size(), dtype(), "y");
    auto cl = ctx().command_list();
    Ops o = ops();
    o.softmax(cl, s, bx.view(), by.view(), with_mask ? std::optional(bm.view()) : std::nullopt);
    cl.submit();
    auto got = download_as(ctx(), by, want.size(), dtype());
    std::vector<double> scale(want.size());
    for (size_t i = 0; i < want.size(); ++i) scale[i] = std::abs(want[i]);
    const bool f16 = dtype() == DType::F16;
    EXPECT_TRUE(close(got, want, scale, f16 ? 1e-3 : 1e-5, f16 ? 6e-8 : 1e-7));
  }
};

TEST_P(SoftmaxTest, RowsOfEveryLength) {
  auto seed = test_seed();
  VKF_SEED_TRACE(seed);
  std::mt19937_64 rng(seed);
  for (uint32_t cols : {1u, 3u, 17u, 255u, 1000u, 4099u}) check({.rows = 5, .cols = cols, .scale = 1.3f}, -4, 4, false, rng);
  check({.rows = 1, .cols = 100000}, -8, 8, false, rng);
  check({.rows = 3000, .cols = 7}, -8, 8, false, rng);  // many short rows
}

TEST_P(SoftmaxTest, LargeInputsStayFinite) {
  auto seed = test_seed();
  VKF_SEED_TRACE(seed);
  std::mt19937_64 rng(seed);
  check({.rows = 4, .cols = 300}, -1e4, 1e4, false, rng);
  check({.rows = 4, .cols = 300, .scale = 0.5f}, 9990, 10000, false, rng);
}

TEST_P(SoftmaxTest, AdditiveCausalAndBroadcastMasks) {
  auto seed = test_seed();
  VKF_SEED_TRACE(seed);
  std::mt19937_64 rng(seed);
  check({.rows = 17, .cols = 33, .mask_rows = 17}, -3, 3, true, rng);
  check({.rows = 12, .cols = 12, .causal = true, .causal_rows = 12}, -3, 3, false, rng);
  check({.rows = 2 * 3 * 5, .cols = 9, .mask_rows = 2, .mask_row_div = 15, .causal = true, .causal_rows = 5,
         .causal_offset = 4},
        -3, 3, true, rng);
}

// torch.softmax(torch.full((n,), -inf), -1) is all NaN; so is ours.
TEST_P(SoftmaxTest, FullyMaskedRowIsNaNLikePyTorch) {
  const uint32_t cols = 6;
  std::vector<double> x(2 * cols, 0.5), mask(2 * cols, 0.0);
  for (uint32_t c = 0; c < cols; ++c) mask[c] = -INFINITY;  // row 0 fully masked
  Buffer bx = upload_as(ctx(), x, dtype(), "x"), bm = upload_as(ctx(), mask, dtype(), "mask");
  Buffer by = poisoned_finite(ctx(), x.size(), dtype(), "y");  // so a skipped row cannot pass as NaN
  auto cl = ctx().command_list();
  Ops o = ops();
  o.softmax(cl, {.rows = 2, .cols = cols, .mask_rows = 2}, bx.view(), by.view(), bm.view());
  cl.submit();
  auto y = download_as(ctx(), by, x.size(), dtype());
  for (uint32_t c = 0; c < cols; ++c) {
    EXPECT_TRUE(std::isnan(y[c]));
    EXPECT_NEAR(y[cols + c], 1.0 / cols, 1e-3);
  }
}

TEST_P(SoftmaxTest, WrongShapesAreClearErrors) {
  Buffer b = ctx().buffer(64, "small");
  auto cl = ctx().command_list();
  Ops o = ops();
  EXPECT_THROW(o.softmax(cl, {.rows = 100, .cols = 100}, b.view(), b.view()), Error);
  EXPECT_THROW(o.softmax(cl, {.rows = 0, .cols = 1}, b.view(), b.view()), Error);
  EXPECT_THROW(o.softmax(cl, {.rows = 1, .cols = 4, .mask_rows = 9}, b.view(), b.view(), b.view()), Error);
  cl.submit();
}

VKF_FOR_EACH_DTYPE(SoftmaxTest);

}  // namespace
}  // namespace vkf::test
