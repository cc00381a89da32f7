// add, relu, both GELUs and SwiGLU against double-precision references.
#include "support/ops_test.hpp"
#include "ops/reference.hpp"

namespace vkf::test {
namespace {

class ElementwiseTest : public OpsTest {};

TEST_P(ElementwiseTest, ElementwiseAddReluGelu) {
  auto seed = test_seed();
  VKF_SEED_TRACE(seed);
  std::mt19937_64 rng(seed);
  for (uint32_t n : {1u, 3u, 17u, 255u, 1000u, 70001u}) {
    auto a = random_values(n, rng, -6, 6), b = random_values(n, rng, -6, 6);
    for (auto* v : {&a, &b})
      for (auto& e : *v) e = stored(e, dtype());
    Buffer ba = upload_as(ctx(), a, dtype(), "a"), bb = upload_as(ctx(), b, dtype(), "b");
    std::vector<Buffer> outs;
    for (int i = 0; i < 4; ++i) outs.push_back(poisoned(ctx(), n, dtype(), "y"));
    auto cl = ctx().command_list();
    Ops o = ops();
    o.add(cl, ba.view(), bb.view(), outs[0].view(), n);
    o.relu(cl, ba.view(), outs[1].view(), n);
    o.gelu(cl, ba.view(), outs[2].view(), n);
    o.gelu(cl, ba.view(), outs[3].view(), n, true);
    cl.submit();
    std::vector<double> want[4], scale[4];
    for (uint32_t i = 0; i < n; ++i) {
      want[0].push_back(a[i] + b[i]);
      scale[0].push_back(std::abs(a[i]) + std::abs(b[i]));
      want[1].push_back(ref::activate(a[i], Activation::Relu));
      want[2].push_back(ref::activate(a[i], Activation::Gelu));
      want[3].push_back(ref::activate(a[i], Activation::GeluTanh));
      // GELU's tail is exp(-x^2/2) in fp32: the exponent's rounding (~x^2 * 2^-24)
      // becomes relative error of the result, so the scale grows with x^2.
      for (int k = 1; k < 4; ++k) scale[k].push_back(std::abs(want[k].back()) * (k >= 2 ? 1 + a[i] * a[i] : 1));
    }
    // GELU's erfc fit is good to 1.2e-7 relative and exp to a few ulps: 1e-6 of the scale.
    const bool f16 = dtype() == DType::F16;
    for (int k = 0; k < 4; ++k)
      EXPECT_TRUE(close(download_as(ctx(), outs[k], n, dtype()), want[k], scale[k], f16 ? 1e-3 : (k >= 2 ? 1e-6 : 1e-7),
                        f16 ? 6e-8 : 1e-30))
          << "op " << k << " n " << n;
  }
}

// SwiGLU: silu(gate) * up over rows of [gate | up], at awkward widths. silu's exp in
// fp32 is a few ulps; the product adds one rounding: 1e-6 of |silu(g)| |u| (fp16: 1e-3).
TEST_P(ElementwiseTest, SwigluGatesTheUpHalfBySiluOfTheGateHalf) {
  auto seed = test_seed();
  VKF_SEED_TRACE(seed);
  std::mt19937_64 rng(seed);
  for (auto [rows, cols] : {std::pair{1u, 1u}, {3u, 17u}, {17u, 255u}, {2u, 1000u}, {1030u, 3u}}) {
    auto x = random_values(size_t(rows) * 2 * cols, rng, -8, 8);
    for (auto& e : x) e = stored(e, dtype());
    Buffer bx = upload_as(ctx(), x, dtype(), "x"), by = poisoned(ctx(), size_t(rows) * cols, dtype(), "y");
    auto cl = ctx().command_list();
    ops().swiglu(cl, bx.view(), by.view(), rows, cols);
    cl.submit();
    std::vector<double> want, scale;
    for (uint32_t r = 0; r < rows; ++r)
      for (uint32_t j = 0; j < cols; ++j) {
        const double g = x[size_t(r) * 2 * cols + j], u = x[size_t(r) * 2 * cols + cols + j];
        want.push_back(g / (1 + std::exp(-g)) * u);
        scale.push_back(std::abs(want.back()) * (1 + std::abs(g)));  // exp(-g)'s rounding grows with |g|
      }
    const bool f16 = dtype() == DType::F16;
    EXPECT_TRUE(close(download_as(ctx(), by, want.size(), dtype()), want, scale, f16 ? 1e-3 : 1e-6, f16 ? 6e-8 : 1e-30))
        << rows << "x" << cols;
  }
  auto cl = ctx().command_list();
  Buffer small = ctx().buffer(16, "small");
  EXPECT_THROW(ops().swiglu(cl, small.view(), small.view(), 4, 4), Error);  // x needs 32 elements
}

VKF_FOR_EACH_DTYPE(ElementwiseTest);

}  // namespace
}  // namespace vkf::test
