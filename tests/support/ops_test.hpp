#pragma once
// Helpers for kernel tests: host data in double, device data in the op's storage
// type, poisoned outputs, and the relative-error check every kernel test uses.
#include <cmath>
#include <cstring>

#include "support/gpu_test.hpp"
#include "vkformer/ops.hpp"

namespace vkf::test {

uint16_t to_half(float f);
float from_half(uint16_t h);

// Rounds to what the device stores, so references start from the same inputs.
inline double stored(double x, DType t) { return t == DType::F16 ? from_half(to_half(float(x))) : float(x); }

std::vector<double> random_values(size_t n, std::mt19937_64& rng, double lo = -1, double hi = 1);

// Uploads values converted to `t` into a fresh buffer (padded so it is never empty).
Buffer upload_as(Context& ctx, const std::vector<double>& v, DType t, const char* name);
// A buffer of `n` elements of `t`, every element NaN, so an unwritten element fails.
Buffer poisoned(Context& ctx, size_t n, DType t, const char* name);
// The same poisoned with a finite value, for tests that expect NaN where the kernel
// must write one: a NaN poison would let an unwritten element pass.
constexpr double kFinitePoison = 12345.0;  // exact in fp16 and fp32, and no kernel output here could be it
Buffer poisoned_finite(Context& ctx, size_t n, DType t, const char* name);
std::vector<double> download_as(Context& ctx, const Buffer& b, size_t n, DType t);
std::vector<uint32_t> download_u32(Context& ctx, const Buffer& b, size_t n);
Buffer upload_u32(Context& ctx, const std::vector<uint32_t>& v, const char* name);

// Every element must satisfy |got - want| <= rtol * scale[i] + atol, where scale is
// the magnitude the error grows with (|want| for rounding, sum |a||b| for a dot
// product). NaN matches NaN only where `want` is NaN. Fails with the first offender.
::testing::AssertionResult close(const std::vector<double>& got, const std::vector<double>& want,
                                 const std::vector<double>& scale, double rtol, double atol = 0);

// Kernel tests run per storage type and per profile: the device as it is, and clamped
// to the portable profile (ContextOptions::profile), so the kernel variants a GPU
// would get (shared-memory reductions, GPU tile shapes) run here too.
struct OpsParam {
  DType dtype;
  bool portable;
};

class OpsTest : public ::testing::TestWithParam<OpsParam> {
 protected:
  void SetUp() override;
  void TearDown() override;
  Context& ctx() { return context(GetParam().portable); }
  DType dtype() const { return GetParam().dtype; }
  Ops ops() { return Ops(ctx(), dtype()); }

 private:
  static Context& context(bool portable);
  uint64_t messages_before_ = 0;
};

std::string ops_param_name(const ::testing::TestParamInfo<OpsParam>& info);
#define VKF_FOR_EACH_DTYPE(Suite)                                                                                  \
  INSTANTIATE_TEST_SUITE_P(, Suite,                                                                                \
                           ::testing::Values(OpsParam{DType::F32, false}, OpsParam{DType::F16, false},            \
                                             OpsParam{DType::F32, true}, OpsParam{DType::F16, true}),             \
                           ops_param_name)

}  // namespace vkf::test
