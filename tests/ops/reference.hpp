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
    case Activation::Silu: return x / (1 + std::exp(-x));
    case Activation::Tanh: return std::tanh(x);
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

// A gated product (Gemm::glu, one batch of heads): the plain product of 2N columns, then
// act(gate) * up (+ residual). The scale bounds the gate's error times |up| (the
// activations' slopes are at most 1.13) plus |act(gate)| times the up's.
inline GemmResult gemm_glu(const Gemm& g, const std::vector<double>& A, const std::vector<double>& B,
                           const std::vector<double>* bias, const std::vector<double>* R) {
  Gemm p = g;
  p.glu = false, p.act = Activation::None, p.N = 2 * g.N, p.ldc = 2 * g.N, p.ldr = 0;
  p.stride_c = {uint64_t(g.M) * 2 * g.N, 0};
  const GemmResult gu = gemm(p, A, B, bias, nullptr);
  const uint32_t ldc = g.ldc ? g.ldc : g.N, ldr = g.ldr ? g.ldr : g.N;
  size_t c_size = 0;
  for (uint32_t bo = 0; bo < g.batch; ++bo)
    c_size = std::max<size_t>(c_size, bo * g.stride_c.outer + (g.M - 1) * ldc + g.N);
  GemmResult r{std::vector<double>(c_size, std::nan("")), std::vector<double>(c_size, 0)};
  for (uint32_t bo = 0; bo < g.batch; ++bo)
    for (uint32_t m = 0; m < g.M; ++m)
      for (uint32_t n = 0; n < g.N; ++n) {
        const size_t gi = (size_t(bo) * g.M + m) * 2 * g.N + n, ui = gi + g.N;
        const double gate = activate(gu.c[gi], g.act), up = gu.c[ui];
        double v = gate * up, mag = 1.13 * gu.scale[gi] * std::abs(up) + std::abs(gate) * gu.scale[ui];
        if (R) {
          const double rv = (*R)[bo * g.stride_r.outer + size_t(m) * ldr + n];
          v += rv;
          mag += std::abs(rv);
        }
        r.c[bo * g.stride_c.outer + size_t(m) * ldc + n] = v;
        r.scale[bo * g.stride_c.outer + size_t(m) * ldc + n] = mag;
      }
  return r;
}

}  // namespace vkf::test::ref

namespace vkf::test::ref {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

// softmax(scale * x + mask) per row, with the same broadcasting rules as Softmax.
inline std::vector<double> softmax(const Softmax& s, const std::vector<double>& x, const std::vector<double>* mask) {
  std::vector<double> y(size_t(s.rows) * s.cols);
  for (uint32_t r = 0; r < s.rows; ++r) {
    const uint32_t mrow = (r / s.mask_row_div) % s.mask_rows;
    std::vector<double> v(s.cols);
    double m = kNegInf;
    for (uint32_t c = 0; c < s.cols; ++c) {
      v[c] = s.scale * x[size_t(r) * s.cols + c] + (mask ? (*mask)[size_t(mrow) * s.cols + c] : 0.0);
      if (s.causal && c > (r % s.causal_rows) + s.causal_offset) v[c] = kNegInf;
      m = std::max(m, v[c]);
    }
    double sum = 0;
    for (auto& e : v) sum += (e == kNegInf ? 0.0 : std::exp(e - m));
    for (uint32_t c = 0; c < s.cols; ++c)
      y[size_t(r) * s.cols + c] = m == kNegInf ? std::nan("") : (v[c] == kNegInf ? 0.0 : std::exp(v[c] - m) / sum);
  }
  return y;
}

inline std::vector<double> layer_norm(const LayerNorm& n, const std::vector<double>& x, const std::vector<double>& g,
                                      const std::vector<double>& b, const std::vector<double>* r) {
  std::vector<double> y(size_t(n.rows) * n.cols);
  for (uint32_t i = 0; i < n.rows; ++i) {
    std::vector<double> v(n.cols);
    double mean = 0, var = 0;
    for (uint32_t c = 0; c < n.cols; ++c) {
      v[c] = x[size_t(i) * n.cols + c] + (r ? (*r)[size_t(i) * n.cols + c] : 0.0);
      mean += v[c];
    }
    mean = n.kind == NormKind::RMSNorm ? 0.0 : mean / n.cols;  // RMSNorm: the mean square, no centring, no beta
    for (auto e : v) var += (e - mean) * (e - mean);
    var /= n.cols;
    for (uint32_t c = 0; c < n.cols; ++c)
      y[size_t(i) * n.cols + c] = (v[c] - mean) / std::sqrt(var + n.eps) * g[c] + (n.kind == NormKind::RMSNorm ? 0.0 : b[c]);
  }
  return y;
}

// What a normalised element's fp32 rounding grows with, per element of x [rows, cols]:
// (|x| + |mean|) rstd |g| + |b|, where (x - mean) rstd g + b itself may cancel to near 0
// (rstd from the centred variance, or an RMSNorm's mean square).
inline std::vector<double> layer_norm_rounding_scale(const LayerNorm& n, const std::vector<double>& x,
                                                     const std::vector<double>& g, const std::vector<double>& b) {
  std::vector<double> s(size_t(n.rows) * n.cols);
  for (uint32_t i = 0; i < n.rows; ++i) {
    const double* row = &x[size_t(i) * n.cols];
    double mean = 0, m2 = 0;
    for (uint32_t c = 0; c < n.cols; ++c) mean += row[c] / n.cols;
    for (uint32_t c = 0; c < n.cols; ++c) m2 += (row[c] - mean) * (row[c] - mean);
    const double rstd = 1 / std::sqrt((n.kind == NormKind::RMSNorm ? m2 / n.cols + mean * mean : m2 / n.cols) + n.eps);
    for (uint32_t c = 0; c < n.cols; ++c)
      s[size_t(i) * n.cols + c] = (std::abs(row[c]) + std::abs(mean)) * rstd * std::abs(g[c]) + std::abs(b[c]);
  }
  return s;
}

// Attention over packed [B, L, H*d] q/o and [B, Lk, H*d] k/v; the scale of each output
// element is sum_j p_j |v_j| (what its rounding error grows with).
// An AttentionBias's table as the reference reads it: head h's score of key j for the
// query at position p gains table[h * positions + origin + j - p].
struct PositionBias {
  std::vector<double> table;
  uint32_t positions = 0, origin = 0;
  double at(uint32_t h, uint32_t j, uint64_t p) const { return table[size_t(h) * positions + origin + j - p]; }
};

// query_position: query i's position is causal_offset + i, or that (for a decode step's one query).
inline std::pair<std::vector<double>, std::vector<double>> attention(const Attention& a, const std::vector<double>& q,
                                                                     const std::vector<double>& k,
                                                                     const std::vector<double>& v,
                                                                     const std::vector<double>* key_mask,
                                                                     const PositionBias* bias = nullptr,
                                                                     std::optional<uint64_t> query_position = {}) {
  // K and V packed [B, L, kv_heads*d]; query head h reads K/V head h / (heads / kv_heads).
  const uint32_t H = a.heads, d = a.head_dim, W = H * d, KVH = a.kv_heads ? a.kv_heads : H, KW = KVH * d;
  const double scale = a.scale ? a.scale : 1.0 / std::sqrt(double(d));
  std::vector<double> o(size_t(a.batch) * a.q_len * W), mag(o.size());
  for (uint32_t b = 0; b < a.batch; ++b)
    for (uint32_t h = 0; h < H; ++h)
      for (uint32_t i = 0; i < a.q_len; ++i) {
        std::vector<double> s(a.kv_len);
        double m = kNegInf;
        for (uint32_t j = 0; j < a.kv_len; ++j) {
          double dot = 0;
          for (uint32_t e = 0; e < d; ++e)
            dot += q[(size_t(b) * a.q_len + i) * W + h * d + e] * k[(size_t(b) * a.kv_len + j) * KW + (h / (H / KVH)) * d + e];
          s[j] = dot * scale + (key_mask ? (*key_mask)[size_t(b) * a.kv_len + j] : 0.0) +
                 (bias ? bias->at(h, j, query_position ? *query_position : a.causal_offset + i) : 0.0);
          if (a.causal && j > i + a.causal_offset) s[j] = kNegInf;
          m = std::max(m, s[j]);
        }
        double sum = 0;
        for (auto& e : s) {
          e = e == kNegInf ? 0.0 : std::exp(e - m);
          sum += e;
        }
        for (uint32_t e = 0; e < d; ++e) {
          double acc = 0, am = 0;
          for (uint32_t j = 0; j < a.kv_len; ++j) {
            double vv = v[(size_t(b) * a.kv_len + j) * KW + (h / (H / KVH)) * d + e];
            acc += s[j] / sum * vv;
            am += s[j] / sum * std::abs(vv);
          }
          const size_t idx = (size_t(b) * a.q_len + i) * W + h * d + e;
          o[idx] = m == kNegInf ? std::nan("") : acc;
          mag[idx] = am;
        }
      }
  return {o, mag};
}

}  // namespace vkf::test::ref
