// LayerNorm against a double reference. Tolerance: y = (v - mean) * rstd * g + b in
// fp32 with two-pass statistics; the error grows with |v - mean| * rstd * |g| + |b|
// (the terms summed), 1e-5 of that covers sums over 10^4 elements. fp16 storage:
// one more rounding of the result, 1e-3 of |y|.
#include "support/ops_test.hpp"
#include "ops/reference.hpp"

namespace vkf::test {
namespace {

class LayerNormTest : public OpsTest {
 protected:
  void check(const LayerNorm& n, double offset, bool with_residual, bool write_sum, std::mt19937_64& rng) {
    SCOPED_TRACE("rows=" + std::to_string(n.rows) + " cols=" + std::to_string(n.cols));
    const size_t count = size_t(n.rows) * n.cols;
    auto x = random_values(count, rng, offset - 2, offset + 2), r = random_values(count, rng);
    auto g = random_values(n.cols, rng, 0.5, 1.5), b = random_values(n.cols, rng);
    for (auto* v : {&x, &r, &g, &b})
      for (auto& e : *v) e = stored(e, dtype());
    auto want = ref::layer_norm(n, x, g, b, with_residual ? &r : nullptr);
    Buffer bx = upload_as(ctx(), x, dtype(), "x"), br = upload_as(ctx(), r, dtype(), "r");
    Buffer bg = upload_as(ctx(), g, dtype(), "gamma"), bb = upload_as(ctx(), b, dtype(), "beta");
    Buffer by = poisoned(ctx(), count, dtype(), "y"), bs = poisoned(ctx(), count, dtype(), "sum");
    auto cl = ctx().command_list();
    Ops o = ops();
    o.layer_norm(cl, n, bx.view(), bg.view(), bb.view(), by.view(),
                 with_residual ? std::optional(br.view()) : std::nullopt,
                 write_sum ? std::optional(bs.view()) : std::nullopt);
    cl.submit();
    auto got = download_as(ctx(), by, count, dtype());
    // The mean itself is computed with an error relative to |mean|, which reaches y
    // multiplied by rstd * |gamma|: that term joins the scale.
    std::vector<double> scale(count);
    for (uint32_t row = 0; row < n.rows; ++row) {
      double mean = 0, var = 0;
      for (uint32_t c = 0; c < n.cols; ++c) mean += x[row * n.cols + c] + (with_residual ? r[row * n.cols + c] : 0);
      mean = n.kind == NormKind::RMSNorm ? 0.0 : mean / n.cols;
      for (uint32_t c = 0; c < n.cols; ++c) {
        double d = x[row * n.cols + c] + (with_residual ? r[row * n.cols + c] : 0) - mean;
        var += d * d / n.cols;
      }
      const double rstd = 1 / std::sqrt(var + n.eps);
      for (uint32_t c = 0; c < n.cols; ++c) {
        const size_t i = size_t(row) * n.cols + c;
        const double beta = n.kind == NormKind::RMSNorm ? 0.0 : b[c];
        scale[i] = std::abs(want[i] - beta) + std::abs(beta) + std::abs(want[i]) + std::abs(mean) * rstd * std::abs(g[c]);
      }
    }
    const bool f16 = dtype() == DType::F16;
    EXPECT_TRUE(close(got, want, scale, f16 ? 1e-3 : 1e-5, f16 ? 6e-8 : 0));
    if (write_sum) {
      auto sum = download_as(ctx(), bs, count, dtype());
      std::vector<double> want_sum(count), sum_scale(count);
      for (size_t i = 0; i < count; ++i) {
        want_sum[i] = x[i] + r[i];
        sum_scale[i] = std::abs(x[i]) + std::abs(r[i]);
      }
      EXPECT_TRUE(close(sum, want_sum, sum_scale, f16 ? 1e-3 : 1e-7));
    }
  }
};

TEST_P(LayerNormTest, RowsOfEveryLength) {
  auto seed = test_seed();
  VKF_SEED_TRACE(seed);
  std::mt19937_64 rng(seed);
  for (uint32_t cols : {1u, 3u, 17u, 255u, 1000u, 10007u}) check({.rows = 3, .cols = cols}, 0, false, false, rng);
  check({.rows = 2000, .cols = 5, .eps = 1e-6f}, 0, false, false, rng);
}

// RMSNorm (Llama): no mean subtracted, no beta (the reference has none; the kernel reads none), with a
// residual and the sum written (pre-norm), rows of every length, a large mean kept.
TEST_P(LayerNormTest, RmsNormOfRowsOfEveryLength) {
  auto seed = test_seed();
  VKF_SEED_TRACE(seed);
  std::mt19937_64 rng(seed);
  for (uint32_t cols : {1u, 3u, 17u, 255u, 1000u, 10007u}) check({.rows = 3, .cols = cols, .kind = NormKind::RMSNorm}, 0, false, false, rng);
  check({.rows = 17, .cols = 64, .kind = NormKind::RMSNorm}, 100, true, true, rng);
  check({.rows = 2000, .cols = 5, .eps = 1e-6f, .kind = NormKind::RMSNorm}, 0, false, false, rng);
}

TEST_P(LayerNormTest, LargeMeanDoesNotCancel) {
  auto seed = test_seed();
  VKF_SEED_TRACE(seed);
  std::mt19937_64 rng(seed);
  check({.rows = 4, .cols = 512}, dtype() == DType::F16 ? 100 : 1000, false, false, rng);
}

TEST_P(LayerNormTest, FusedResidualAndSumForPreNorm) {
  auto seed = test_seed();
  VKF_SEED_TRACE(seed);
  std::mt19937_64 rng(seed);
  check({.rows = 7, .cols = 96}, 0, true, false, rng);
  check({.rows = 7, .cols = 255}, 0, true, true, rng);
}

// y = LN(LN_inner(x + r)): a post-norm decoder's last layer norm and its final norm in
// one dispatch. The inner norm's output has mean ~beta_in and std ~|gamma_in|, so the
// outer one is well conditioned; the inner statistics add an error ~1e-6 relative to
// the normalised values, inside the same 1e-5 (fp16: 1e-3, one rounding of y).
// Both may be RMSNorms (NormKind: one kind for a model's norms), neither then reading beta.
TEST_P(LayerNormTest, InnerNormThenOuterNorm) {
  auto seed = test_seed();
  VKF_SEED_TRACE(seed);
  std::mt19937_64 rng(seed);
  for (NormKind kind : {NormKind::LayerNorm, NormKind::RMSNorm})
  for (uint32_t cols : {1u, 3u, 17u, 255u, 1000u})
    for (bool with_residual : {false, true}) {
      const bool rms = kind == NormKind::RMSNorm;
      SCOPED_TRACE("cols=" + std::to_string(cols) + (with_residual ? " with residual" : "") + (rms ? " RMSNorm" : ""));
      const LayerNorm n{.rows = 5, .cols = cols, .kind = kind};
      const size_t count = size_t(n.rows) * cols;
      auto x = random_values(count, rng, 3, 7), r = random_values(count, rng);
      auto gi = random_values(cols, rng, 0.5, 1.5), bi = random_values(cols, rng);
      auto g = random_values(cols, rng, 0.5, 1.5), b = random_values(cols, rng);
      for (auto* v : {&x, &r, &gi, &bi, &g, &b})
        for (auto& e : *v) e = stored(e, dtype());
      const auto inner = ref::layer_norm(n, x, gi, bi, with_residual ? &r : nullptr);
      const auto want = ref::layer_norm(n, inner, g, b, nullptr);
      Buffer bx = upload_as(ctx(), x, dtype(), "x"), br = upload_as(ctx(), r, dtype(), "r");
      Buffer bgi = upload_as(ctx(), gi, dtype(), "gamma_in"), bbi = upload_as(ctx(), bi, dtype(), "beta_in");
      if (rms) bbi = poisoned(ctx(), cols, dtype(), "beta_in");  // never read
      Buffer bg = upload_as(ctx(), g, dtype(), "gamma"), bb = upload_as(ctx(), b, dtype(), "beta");
      Buffer by = poisoned(ctx(), count, dtype(), "y");
      auto cl = ctx().command_list();
      Ops o = ops();
      o.layer_norm(cl, n, bx.view(), bg.view(), bb.view(), by.view(),
                   with_residual ? std::optional(br.view()) : std::nullopt, std::nullopt,
                   NormWeights{bgi.view(), bbi.view()});
      cl.submit();
      std::vector<double> scale(count);
      for (size_t i = 0; i < count; ++i)
        scale[i] = std::abs(want[i]) + (rms ? 0.0 : std::abs(b[i % cols])) + 4 * std::abs(g[i % cols]);
      const bool f16 = dtype() == DType::F16;
      EXPECT_TRUE(close(download_as(ctx(), by, count, dtype()), want, scale, f16 ? 1e-3 : 1e-5, f16 ? 6e-8 : 0));
    }
}

TEST_P(LayerNormTest, WrongShapesAreClearErrors) {
  Buffer b = ctx().buffer(64, "small");
  auto cl = ctx().command_list();
  Ops o = ops();
  EXPECT_THROW(o.layer_norm(cl, {.rows = 4, .cols = 100}, b.view(), b.view(), b.view(), b.view()), Error);
  EXPECT_THROW(o.layer_norm(cl, {.rows = 1, .cols = 2}, b.view(), b.view(), b.view(), b.view(), std::nullopt, b.view()),
               Error);
  cl.submit();
}

VKF_FOR_EACH_DTYPE(LayerNormTest);

}  // namespace
}  // namespace vkf::test
