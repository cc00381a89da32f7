// llama.cpp's K-quants (vkformer/blocks.hpp): its reference quantizers without an
// importance matrix, as ggml-quants.c describes them, and their dequantization as the
// gguf package's quants module computes it. A super-block of 256 values is split into
// sub-blocks (32 values for Q4_K and Q5_K, 16 for Q6_K); each sub-block's scale (and
// minimum) is searched for on its own, then the sub-blocks' scales are themselves
// quantized against the largest, to 6 bits (Q4_K, Q5_K) or 8 (Q6_K), and the codes
// recomputed from the scales as stored.
#include "k_quants.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "vkformer/half.hpp"

namespace vkf::k_quants {

namespace {

constexpr int kSuper = int(kSuperBlockValues);
constexpr float kGroupEps = 1e-15f;  // below this, a Q6_K group counts as zeros

// Round to nearest, ties to even (llama.cpp's nearest_int: the inputs stay far inside
// the range where its float trick is exact; clamped so no input converts out of range).
int nearest(float v) { return int(std::nearbyint(std::clamp(v, -4194303.0f, 4194303.0f))); }

void put_half(uint8_t* at, float v) {
  const uint16_t h = float_to_half(v);
  at[0] = uint8_t(h), at[1] = uint8_t(h >> 8);
}
float get_half(const uint8_t* at) { return half_to_float(uint16_t(at[0] | at[1] << 8)); }

// Scale and minimum of n values with codes 0 .. nmax, by weighted least squares over a
// few candidate ranges around (max - min) / nmax (nmax + rmin + rdelta i for i in
// 0 .. steps): the codes into L, the minimum (as a non-negative amount subtracted) into
// *minus_min, the scale returned.
float scale_and_min(int n, int nmax, const float* x, const float* w, uint8_t* L, float* minus_min, float rmin,
                    float rdelta, int steps) {
  float lo = x[0], hi = x[0], sum_w = w[0], sum_x = w[0] * x[0];
  for (int i = 1; i < n; ++i) {
    lo = std::min(lo, x[i]), hi = std::max(hi, x[i]);
    sum_w += w[i];
    sum_x += w[i] * x[i];
  }
  if (lo > 0) lo = 0;
  if (hi == lo) {
    std::fill(L, L + n, uint8_t(0));
    *minus_min = -lo;
    return 0.0f;
  }
  float iscale = nmax / (hi - lo), scale = 1 / iscale, best = 0;
  for (int i = 0; i < n; ++i) {
    L[i] = uint8_t(std::clamp(nearest(iscale * (x[i] - lo)), 0, nmax));
    const float diff = scale * L[i] + lo - x[i];
    best += w[i] * (diff * diff);
  }
  uint8_t trial[32];
  for (int s = 0; s <= steps; ++s) {
    iscale = (rmin + rdelta * s + nmax) / (hi - lo);
    float sum_l = 0, sum_l2 = 0, sum_xl = 0;
    for (int i = 0; i < n; ++i) {
      const int l = std::clamp(nearest(iscale * (x[i] - lo)), 0, nmax);
      trial[i] = uint8_t(l);
      sum_l += w[i] * l;
      sum_l2 += w[i] * l * l;
      sum_xl += w[i] * l * x[i];
    }
    const float D = sum_w * sum_l2 - sum_l * sum_l;
    if (D <= 0) continue;
    float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D, this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
    if (this_min > 0) this_min = 0, this_scale = sum_xl / sum_l2;
    float error = 0;
    for (int i = 0; i < n; ++i) {
      const float diff = this_scale * trial[i] + this_min - x[i];
      error += w[i] * (diff * diff);
    }
    if (error < best) {
      std::copy(trial, trial + n, L);
      best = error, scale = this_scale, lo = this_min;
    }
  }
  *minus_min = -lo;
  return scale;
}

// Signed scale of n values with codes -nmax .. nmax - 1 (stored + nmax), weighted by
// x^2, trying iscales around -nmax / max: Q6_K's sub-blocks.
float signed_scale(int n, int nmax, const float* x, int8_t* L) {
  float max = 0, amax = 0;
  for (int i = 0; i < n; ++i)
    if (std::fabs(x[i]) > amax) amax = std::fabs(x[i]), max = x[i];
  if (amax < kGroupEps) {
    std::fill(L, L + n, int8_t(0));
    return 0.0f;
  }
  auto code = [&](float iscale, int i) { return std::clamp(nearest(iscale * x[i]), -nmax, nmax - 1); };
  float iscale = -nmax / max, sum_lx = 0, sum_l2 = 0;
  for (int i = 0; i < n; ++i) {
    const int l = code(iscale, i);
    L[i] = int8_t(l + nmax);
    const float w = x[i] * x[i];
    sum_lx += w * x[i] * l;
    sum_l2 += w * l * l;
  }
  float scale = sum_l2 ? sum_lx / sum_l2 : 0.0f, best = scale * sum_lx;
  for (int s = -9; s <= 9; ++s) {
    if (s == 0) continue;
    iscale = -(nmax + 0.1f * s) / max;
    sum_lx = sum_l2 = 0;
    for (int i = 0; i < n; ++i) {
      const int l = code(iscale, i);
      const float w = x[i] * x[i];
      sum_lx += w * x[i] * l;
      sum_l2 += w * l * l;
    }
    if (sum_l2 > 0 && sum_lx * sum_lx > best * sum_l2) {
      for (int i = 0; i < n; ++i) L[i] = int8_t(code(iscale, i) + nmax);
      scale = sum_lx / sum_l2, best = scale * sum_lx;
    }
  }
  return scale;
}

// Q4_K's and Q5_K's 12 bytes of 6-bit (scale, min) pairs for 8 sub-blocks: pairs 0-3 in
// the low 6 bits of bytes 0-3 and 4-7; pairs 4-7's low 4 bits in bytes 8-11, their top 2
// bits in the top bits of bytes 0-7.
void pack_scale_min(int j, uint8_t sc, uint8_t m, uint8_t* s) {
  if (j < 4) {
    s[j] = sc, s[j + 4] = m;
  } else {
    s[j + 4] = uint8_t((sc & 0xF) | ((m & 0xF) << 4));
    s[j - 4] |= uint8_t((sc >> 4) << 6);
    s[j] |= uint8_t((m >> 4) << 6);
  }
}

// Q4_K (nmax 15) and Q5_K (31): codes of 256 values into L, d, dmin and scales into out.
void quantize_with_min(BlockType t, int nmax, float rmin, int steps, const float* x, uint8_t* L, uint8_t* out) {
  float scales[8], mins[8], w[32], max_scale = 0, max_min = 0;
  for (int j = 0; j < 8; ++j) {
    const float* xj = x + 32 * j;
    float sum_x2 = 0;
    for (int l = 0; l < 32; ++l) sum_x2 += xj[l] * xj[l];
    const float av_x = std::sqrt(sum_x2 / 32);
    for (int l = 0; l < 32; ++l) w[l] = av_x + std::fabs(xj[l]);
    scales[j] = scale_and_min(32, nmax, xj, w, L + 32 * j, &mins[j], rmin, 0.1f, steps);
    max_scale = std::max(max_scale, scales[j]);
    max_min = std::max(max_min, mins[j]);
  }
  const float inv_scale = max_scale > 0 ? 63.0f / max_scale : 0.0f, inv_min = max_min > 0 ? 63.0f / max_min : 0.0f;
  uint8_t* s = out + 4;
  std::memset(s, 0, 12);
  for (int j = 0; j < 8; ++j)
    pack_scale_min(j, uint8_t(std::min(63, nearest(inv_scale * scales[j]))),
                   uint8_t(std::min(63, nearest(inv_min * mins[j]))), s);
  put_half(out, max_scale / 63.0f);
  put_half(out + 2, max_min / 63.0f);
  for (int j = 0; j < 8; ++j) {  // the codes again, against the scales as stored
    const SubScale sm = sub_scale(t, out, j);
    if (sm.d == 0) continue;
    for (int l = 0; l < 32; ++l) L[32 * j + l] = uint8_t(std::clamp(nearest((x[32 * j + l] - sm.m) / sm.d), 0, nmax));
  }
}

void quantize_q6_k(const float* x, uint8_t* out) {
  int8_t L[kSuper];
  float scales[16], max_scale = 0, max_abs = 0;
  for (int j = 0; j < 16; ++j) {
    scales[j] = signed_scale(16, 32, x + 16 * j, L + 16 * j);
    if (std::fabs(scales[j]) > max_abs) max_abs = std::fabs(scales[j]), max_scale = scales[j];
  }
  std::memset(out, 0, block_bytes(BlockType::Q6_K));
  if (max_abs < kGroupEps) return;  // all zeros: d 0
  uint8_t *ql = out, *qh = out + 128;
  int8_t* sc = reinterpret_cast<int8_t*>(out + 192);
  const float iscale = -128.0f / max_scale;
  put_half(out + 208, 1 / iscale);
  for (int j = 0; j < 16; ++j) sc[j] = int8_t(std::min(127, nearest(iscale * scales[j])));
  for (int j = 0; j < 16; ++j) {
    const float d = get_half(out + 208) * sc[j];
    if (d == 0) continue;
    for (int l = 0; l < 16; ++l) L[16 * j + l] = int8_t(std::clamp(nearest(x[16 * j + l] / d), -32, 31) + 32);
  }
  // Each 128 values: low nibbles of values l and l + 64 in byte l, of l + 32 and l + 96 in
  // byte l + 32; their high bit pairs in byte l of qh, 2 bits each in that order.
  for (int h = 0; h < kSuper; h += 128, ql += 64, qh += 32)
    for (int l = 0; l < 32; ++l) {
      const uint8_t* q = reinterpret_cast<const uint8_t*>(L + h + l);
      ql[l] = uint8_t((q[0] & 0xF) | (q[64] & 0xF) << 4);
      ql[l + 32] = uint8_t((q[32] & 0xF) | (q[96] & 0xF) << 4);
      qh[l] = uint8_t(q[0] >> 4 | (q[32] >> 4) << 2 | (q[64] >> 4) << 4 | (q[96] >> 4) << 6);
    }
}

}  // namespace

SubScale sub_scale(BlockType t, const uint8_t* b, int j) {
  if (t == BlockType::Q6_K) return {get_half(b + 208) * float(int8_t(b[192 + j])), 0.0f};
  const uint8_t* s = b + 4;
  const uint8_t sc = j < 4 ? s[j] & 63 : uint8_t((s[j + 4] & 0xF) | ((s[j - 4] >> 6) << 4));
  const uint8_t m = j < 4 ? s[j + 4] & 63 : uint8_t((s[j + 4] >> 4) | ((s[j] >> 6) << 4));
  return {get_half(b) * float(sc), -(get_half(b + 2) * float(m))};
}

uint8_t code(BlockType t, const uint8_t* b, int i) {
  switch (t) {
    case BlockType::Q4_K: return uint8_t(b[16 + 32 * (i / 64) + i % 32] >> (4 * (i / 32 % 2)) & 0xF);
    case BlockType::Q5_K: {
      const uint8_t low = uint8_t(b[48 + 32 * (i / 64) + i % 32] >> (4 * (i / 32 % 2)) & 0xF);
      return uint8_t(low | ((b[16 + i % 32] >> (i / 32)) & 1) << 4);
    }
    default: {  // Q6_K
      const int h = i / 128, r = i % 128, l = r % 32, part = r / 32;  // part: values l, l+32, l+64, l+96
      const uint8_t low = uint8_t(b[64 * h + l + 32 * (part % 2)] >> (4 * (part / 2)) & 0xF);
      return uint8_t(low | ((b[128 + 32 * h + l] >> (2 * part)) & 3) << 4);
    }
  }
}

void quantize(BlockType t, const float* x, uint8_t* out) {
  if (t == BlockType::Q6_K) return quantize_q6_k(x, out);
  uint8_t L[kSuper];
  const bool five = t == BlockType::Q5_K;
  quantize_with_min(t, five ? 31 : 15, five ? -0.5f : -1.0f, five ? 15 : 20, x, L, out);
  uint8_t* qs = out + (five ? 48 : 16);
  if (five) std::memset(out + 16, 0, 32);
  for (int c = 0; c < kSuper / 64; ++c)  // each 64 values: 32 bytes, low nibble first 32
    for (int l = 0; l < 32; ++l) {
      const uint8_t a = L[64 * c + l], b = L[64 * c + 32 + l];
      qs[32 * c + l] = uint8_t((a & 0xF) | (b & 0xF) << 4);
      if (five) out[16 + l] |= uint8_t((a >> 4) << (2 * c) | (b >> 4) << (2 * c + 1));
    }
}

void dequantize(BlockType t, const uint8_t* b, float* x) {
  const int sub = t == BlockType::Q6_K ? 16 : 32;
  const float offset = t == BlockType::Q6_K ? 32.0f : 0.0f;
  for (int j = 0; j < kSuper / sub; ++j) {
    const SubScale s = sub_scale(t, b, j);
    for (int l = 0; l < sub; ++l) {
      const float q = float(code(t, b, sub * j + l)) - offset;
      x[sub * j + l] = t == BlockType::Q6_K ? s.d * q : s.d * q + s.m;  // (d sc) q - (dmin m)
    }
  }
}

}  // namespace vkf::k_quants
