#pragma once
// GEMM outputs against the double reference, the bound every GEMM test states: the GPU
// accumulates in fp32 with fma, so each output's error is a small multiple of 2^-24 of
// sum |a b| (ref::GemmResult::scale), checked at 1e-5 of it; fp16 storage rounds the
// stored result once more, 2^-11 of |c|, so 1e-3; fp16 results below 2^-14 are
// subnormal, 2^-24 = 6e-8 apart: one spacing of slack.
#include "ops/reference.hpp"
#include "support/ops_test.hpp"

namespace vkf::test {

inline ::testing::AssertionResult gemm_close(const std::vector<double>& got, const ref::GemmResult& want, DType dt) {
  std::vector<double> scale(want.c.size());
  const double rtol = 1e-5, store = dt == DType::F16 ? 1e-3 : 0;
  for (size_t i = 0; i < scale.size(); ++i) scale[i] = want.scale[i] + (store / rtol) * std::abs(want.c[i]);
  return close(got, want.c, scale, rtol, dt == DType::F16 ? 6e-8 : 1e-30);
}

}  // namespace vkf::test
