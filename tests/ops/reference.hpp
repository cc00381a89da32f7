#pragma once
// CPU references in double precision, written straight from the formulas.
#include <cmath>
#include <limits>
#include <vector>

#include "vkformer/ops.hpp"

namespace vkf::test::ref {

inline double activate(double x, Activation a) {
  switch (a) {
    case Activation::Relu: return x > 0 ? x : 0;
    case Activation::Gelu: return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
    case Activation::GeluTanh:
      return 0.5 * x * (1 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
    default: return x;
  }
}

// Result and, per element, sum |alpha a b| + |bias| + |residual|: the scale that
// rounding errors in the GPU's fp32 accumulation grow with.
struct GemmResult {
  std::vector<double> c, scale;
};

inline GemmResult gemm(const Gemm& g0, const std::vector<double>& A, const std::vector<double>& B,
                       const std::vector<double>* bias, const std::vector<double>* R) {
  Gemm g = g0;
  if (!g.lda) g.lda = g.trans_a ? g.M : g.K;
  if (!g.ldb) g.ldb = g.trans_b ? g.K : g.N;
  if (!g.ldc) g.ldc = g.N;
  if (!g.ldr) g.ldr = g.N;
  size_t c_size = 0;
  for (uint32_t bo = 0; bo < g.batch; ++bo)
    for (uint32_t h = 0; h < g.heads; ++h)
      c_size = std::max<size_t>(c_size, bo * g.stride_c.outer + h * g.stride_c.inner + (g.M - 1) * g.ldc + g.N);
  GemmResult r{std::vector<double>(c_size, std::nan("")), std::vector<double>(c_size, 0)};
  for (uint32_t bo = 0; bo < g.batch; ++bo)
    for (uint32_t h = 0; h < g.heads; ++h) {
      size_t ao = bo * g.stride_a.outer + h * g.stride_a.inner, boff = bo * g.stride_b.outer + h * g.stride_b.inner;
      size_t co = bo * g.stride_c.outer + h * g.stride_c.inner, ro = bo * g.stride_r.outer + h * g.stride_r.inner;
      for (uint32_t m = 0; m < g.M; ++m)
        for (uint32_t n = 0; n < g.N; ++n) {
          double s = 0, mag = 0;
          for (uint32_t k = 0; k < g.K; ++k) {
            double a = g.trans_a ? A[ao + size_t(k) * g.lda + m] : A[ao + size_t(m) * g.lda + k];
            double b = g.trans_b ? B[boff + size_t(n) * g.ldb + k] : B[boff + size_t(k) * g.ldb + n];
            s += a * b;
            mag += std::abs(a * b);
          }
          double v = g.alpha * s;
          mag = std::abs(g.alpha) * mag;
          if (bias) {
            v += (*bias)[n];
            mag += std::abs((*bias)[n]);
          }
          v = activate(v, g.act);
          if (R) {
            double rv = (*R)[ro + size_t(m) * g.ldr + n];
            v += rv;
            mag += std::abs(rv);
          }
          r.c[co + size_t(m) * g.ldc + n] = v;
          r.scale[co + size_t(m) * g.ldc + n] = mag;
        }
    }
  return r;
}

}  // namespace vkf::test::ref
