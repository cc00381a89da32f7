#include "support/ops_test.hpp"

#include <sstream>

namespace vkf::test {

uint16_t to_half(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint32_t sign = (x >> 16) & 0x8000;
  const int32_t exp = int32_t((x >> 23) & 0xff) - 127 + 15;
  uint32_t mant = x & 0x7fffff;
  if (((x >> 23) & 0xff) == 0xff) return uint16_t(sign | 0x7c00 | (mant ? 0x200 : 0));  // inf, NaN
  if (exp >= 31) return uint16_t(sign | 0x7c00);                                       // overflow
  if (exp <= 0) {                                                                       // subnormal
    if (exp < -10) return uint16_t(sign);
    mant |= 0x800000;
    const uint32_t shift = uint32_t(14 - exp);
    uint32_t h = mant >> shift;
    const uint32_t rem = mant & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (h & 1))) ++h;
    return uint16_t(sign | h);
  }
  uint32_t h = (uint32_t(exp) << 10) | (mant >> 13);
  const uint32_t rem = mant & 0x1fff;
  if (rem > 0x1000 || (rem == 0x1000 && (h & 1))) ++h;  // round to nearest even
  return uint16_t(sign | h);
}

float from_half(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f, mant = h & 0x3ff, x;
  if (exp == 0x1f) x = sign | 0x7f800000 | (mant << 13);
  else if (exp == 0) {
    if (mant == 0) x = sign;
    else {
      int e = -1;
      do {
        ++e;
        mant <<= 1;
      } while (!(mant & 0x400));
      x = sign | (uint32_t(127 - 15 - e) << 23) | ((mant & 0x3ff) << 13);
    }
  } else
    x = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

std::vector<double> random_values(size_t n, std::mt19937_64& rng, double lo, double hi) {
  std::uniform_real_distribution<double> d(lo, hi);
  std::vector<double> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

Buffer upload_as(Context& ctx, const std::vector<double>& v, DType t, const char* name) {
  const size_t n = std::max<size_t>(v.size(), 1);
  Buffer b = ctx.buffer(n * dtype_bytes(t), name);
  if (t == DType::F16) {
    std::vector<uint16_t> h(n, 0);
    for (size_t i = 0; i < v.size(); ++i) h[i] = to_half(float(v[i]));
    ctx.upload(b, h.data(), h.size() * 2);
  } else {
    std::vector<float> f(n, 0.0f);
    for (size_t i = 0; i < v.size(); ++i) f[i] = float(v[i]);
    ctx.upload(b, f.data(), f.size() * 4);
  }
  return b;
}

Buffer poisoned(Context& ctx, size_t n, DType t, const char* name) {
  const size_t bytes = (std::max<size_t>(n, 1) * dtype_bytes(t) + 3) / 4 * 4;
  Buffer b = ctx.buffer(bytes, name);
  auto cl = ctx.command_list();
  cl.fill(b.view(), t == DType::F16 ? 0x7e007e00u : 0x7fc00000u);  // quiet NaNs
  cl.submit();
  return b;
}

std::vector<double> download_as(Context& ctx, const Buffer& b, size_t n, DType t) {
  std::vector<double> out(n);
  if (t == DType::F16) {
    std::vector<uint16_t> h(n);
    ctx.download(b, h.data(), n * 2);
    for (size_t i = 0; i < n; ++i) out[i] = from_half(h[i]);
  } else {
    std::vector<float> f(n);
    ctx.download(b, f.data(), n * 4);
    for (size_t i = 0; i < n; ++i) out[i] = f[i];
  }
  return out;
}

std::vector<uint32_t> download_u32(Context& ctx, const Buffer& b, size_t n) {
  std::vector<uint32_t> v(n);
  ctx.download(b, v.data(), n * 4);
  return v;
}

Buffer upload_u32(Context& ctx, const std::vector<uint32_t>& v, const char* name) {
  Buffer b = ctx.buffer(std::max<size_t>(v.size(), 1) * 4, name);
  if (!v.empty()) ctx.upload(b, v.data(), v.size() * 4);
  return b;
}

::testing::AssertionResult close(const std::vector<double>& got, const std::vector<double>& want,
                                 const std::vector<double>& scale, double rtol, double atol) {
  if (got.size() != want.size()) return ::testing::AssertionFailure() << "sizes differ";
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i])) {
      if (!std::isnan(got[i])) return ::testing::AssertionFailure() << "element " << i << " is " << got[i] << ", expected NaN";
      continue;
    }
    const double err = std::abs(got[i] - want[i]);
    const double bound = rtol * scale[i] + atol;
    if (!(err <= bound))
      return ::testing::AssertionFailure() << "element " << i << " of " << got.size() << " is " << got[i]
                                           << ", expected " << want[i] << " (error " << err << " > bound " << bound
                                           << " = " << rtol << " * " << scale[i] << " + " << atol << ")";
    if (scale[i] > 0) worst = std::max(worst, err / scale[i]);
  }
  return ::testing::AssertionSuccess() << "worst relative error " << worst;
}

}  // namespace vkf::test
