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

// How the decode-step kernel reads A and B: as it chooses, or one way forced
// (Gemm::texel_weights, Gemm::address_weights), and the variant name it then reports.
enum class SmallMReads { Default, Buffers, Texels, Addresses };
inline const char* variant_of(SmallMReads r) {
  return r == SmallMReads::Texels ? "small_m texels" : r == SmallMReads::Addresses ? "small_m addresses" : "small_m";
}
inline void force(Gemm& g, SmallMReads r) {
  g.texel_weights = r == SmallMReads::Default ? std::nullopt : std::optional(r == SmallMReads::Texels);
  g.address_weights = r == SmallMReads::Default ? std::nullopt : std::optional(r == SmallMReads::Addresses);
}

}  // namespace vkf::test
