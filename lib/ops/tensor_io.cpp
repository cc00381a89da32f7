#include "vkformer/tensor_io.hpp"

#include <algorithm>

#include "vkformer/half.hpp"

namespace vkf {

Buffer upload_floats(Context& ctx, std::span<const float> v, DType t, std::string_view name) {
  Buffer b = ctx.buffer(std::max<uint64_t>(v.size(), 1) * dtype_bytes(t), name);
  if (t == DType::F16) {
    std::vector<uint16_t> h(v.size());
    for (size_t i = 0; i < v.size(); ++i) h[i] = float_to_half(v[i]);
    ctx.upload(b, h.data(), h.size() * 2);
  } else {
    ctx.upload(b, v.data(), v.size_bytes());
  }
  return b;
}

std::vector<float> download_floats(Context& ctx, const Buffer& b, size_t n, DType t) {
  std::vector<float> out(n);
  if (t == DType::F16) {
    std::vector<uint16_t> h(n);
    ctx.download(b, h.data(), n * 2);
    for (size_t i = 0; i < n; ++i) out[i] = half_to_float(h[i]);
  } else {
    ctx.download(b, out.data(), n * 4);
  }
  return out;
}

}  // namespace vkf
