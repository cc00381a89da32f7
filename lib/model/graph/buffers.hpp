#pragma once
// Buffers as model code sees them: counted in elements of a storage type, never in
// bytes, and working buffers that are reused from call to call and grow when needed.
#include <algorithm>

#include "vkformer/ops.hpp"

namespace vkf::model {

// Elements [first, first + count) of `b`, which holds elements of `type` (all from `first` on by default).
inline BufferView elements(const Buffer& b, DType type, uint64_t first, uint64_t count = ~0ull) {
  const uint64_t e = dtype_bytes(type);
  return b.view(first * e, count == ~0ull ? ~0ull : count * e);
}

// Makes `b` hold at least `elements` of `element_bytes` each (a new buffer only when the
// old one is too small; recorded command lists that used the old one must be dropped).
// BufferUse::HostAccess for the small buffers uploaded or read back around every submit.
inline Buffer& ensure(Context& ctx, Buffer& b, uint64_t elements, uint32_t element_bytes, const char* name,
                      BufferUse use = BufferUse::Device) {
  const uint64_t bytes = std::max<uint64_t>(elements, 1) * element_bytes;
  if (!b || b.size() < bytes) b = ctx.buffer(bytes, name, use);
  return b;
}

}  // namespace vkf::model
