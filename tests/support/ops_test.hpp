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
std::vector<double> download_as(Context& ctx, const Buffer& b, size_t n, DType t);
std::vector<uint32_t> download_u32(Context& ctx, const Buffer& b, size_t n);
Buffer upload_u32(Context& ctx, const std::vector<uint32_t>& v, const char* name);

// Every element must satisfy |got - want| <= rtol * scale[i] + atol, where scale is
// the magnitude the error grows with (|want| for rounding, sum |a||b| for a dot
// product). NaN matches NaN only where `want` is NaN. Fails with the first offender.
::testing::AssertionResult close(const std::vector<double>& got, const std::vector<double>& want,
                                 const std::vector<double>& scale, double rtol, double atol = 0);

class OpsTest : public GpuTest, public ::testing::WithParamInterface<DType> {
 protected:
  DType dtype() const { return GetParam(); }
  Ops ops() { return Ops(ctx(), dtype()); }
  // Relative error of storing one value: fp32 rounds at 2^-24, fp16 at 2^-11.
  double store_rtol() const { return dtype() == DType::F16 ? 1e-3 : 1e-6; }
};

inline std::string dtype_name(const ::testing::TestParamInfo<DType>& info) { return to_string(info.param); }
#define VKF_FOR_EACH_DTYPE(Suite) \
  INSTANTIATE_TEST_SUITE_P(, Suite, ::testing::Values(DType::F32, DType::F16), dtype_name)

}  // namespace vkf::test
