// Storage type conversion. fp16 -> fp32 is exact. fp32 -> fp16 must round to nearest
// even, as the host's float_to_half and PyTorch do, on devices that can be told to
// (shaderRoundingModeRTEFloat16: the kernel declares RoundingModeRTE) - checked exactly
// there. Elsewhere Vulkan leaves the rounding implementation-defined (it may truncate):
// within one fp16 ulp of the exact value then.
#include <cmath>

#include "support/ops_test.hpp"

namespace vkf::test {
namespace {

class ConvertTest : public OpsTest {};

// The distance between x's two nearest fp16 neighbours (subnormal spacing below 2^-14).
double half_ulp_at(double x) {
  const double a = std::abs(x);
  if (a < std::ldexp(1.0, -14)) return std::ldexp(1.0, -24);
  return std::ldexp(1.0, int(std::floor(std::log2(a))) - 10);
}

TEST_P(ConvertTest, BetweenStorageTypes) {
  auto seed = test_seed();
  VKF_SEED_TRACE(seed);
  std::mt19937_64 rng(seed);
  const bool rte = ctx().capabilities().rounding_rte_fp16;
  for (uint32_t n : {1u, 3u, 17u, 255u, 1000u, 70001u}) {
    auto x = random_values(n, rng, -100, 100);
    if (n >= 4) {
      x[0] = 65504;        // fp16's largest
      x[1] = 1e-7;         // an fp16 subnormal
      x[2] = 1.0 + 0x1p-11;  // exactly halfway between two fp16 values: even (1.0) wins
      x[3] = 1.0 + 3 * 0x1p-11;  // halfway again: even (1 + 2^-9) wins, up
    }
    const DType other = dtype() == DType::F16 ? DType::F32 : DType::F16;
    Buffer src = upload_as(ctx(), x, dtype(), "src"), dst = poisoned(ctx(), n, other, "dst");
    auto cl = ctx().command_list();
    Ops o = ops();
    o.convert(cl, src.view(), dtype(), dst.view(), other, n);
    cl.submit();
    auto got = download_as(ctx(), dst, n, other);
    for (uint32_t i = 0; i < n; ++i) {
      const double in = stored(x[i], dtype());  // what the source buffer holds
      const double want = stored(in, other);    // round to nearest even (or exact, to fp32)
      if (other == DType::F32 || rte)
        ASSERT_EQ(got[i], want) << "element " << i << " = " << in << (rte ? " (RoundingModeRTE)" : "");
      else
        ASSERT_LE(std::abs(got[i] - in), half_ulp_at(in)) << "element " << i << " = " << in << " (rounding unspecified)";
    }
  }
}

VKF_FOR_EACH_DTYPE(ConvertTest);

}  // namespace
}  // namespace vkf::test
