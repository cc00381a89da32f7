#pragma once
// Whether a view can be bound as a storage texel buffer (the kernels that read texels on
// CPU drivers: gemm_small_m, gemm_direct, attention_direct).
#include <algorithm>
#include <cstdint>

#include "vkformer/buffer.hpp"
#include "vkformer/capabilities.hpp"
#include "vkformer/ops.hpp"

namespace vkf::ops {

// A view starting at byte `start`, `bytes` long: a texel-aligned start and 1 to the
// device's maximum whole 16-byte texels (the rule CommandList::dispatch checks), on a
// device whose texel reads can be trusted (Capabilities::storage_texel_reads).
inline bool texel_view_fits(const Capabilities& caps, uint64_t start, uint64_t bytes) {
  return caps.storage_texel_reads && start % std::max<uint64_t>(caps.min_texel_buffer_offset_alignment, 1) == 0 && bytes >= 16 &&
         bytes / 16 <= caps.max_texel_buffer_elements;
}

// A bound view read whole as texels of `dt`: it fits, and in fp16 (8 halves a texel) it
// ends on a whole texel, so that its last elements are not cut off.
inline bool view_reads_as_texels(const Capabilities& caps, const BufferView& v, DType dt) {
  return texel_view_fits(caps, v.offset, v.size) && (dt != DType::F16 || v.size % 16 == 0);
}

}  // namespace vkf::ops
