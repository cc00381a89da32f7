#pragma once
#include <cstdint>

#include "vkformer/capabilities.hpp"

namespace vkf::ops {

// Register-blocked tile sizes for shaders/gemm.comp (specialization constants).
struct GemmTiles {
  uint32_t bm, bn, bk, tm, tn;
  uint32_t invocations() const { return (bm / tm) * (bn / tn); }
  uint32_t shared_bytes() const { return bk * (bm + bn) * 4; }
};

// Picks tiles from the device's limits and kind; `tiles_in_c` is how many BM x BN
// tiles of the large configuration the product has (small products get smaller tiles
// so the GPU has enough workgroups).
GemmTiles choose_gemm_tiles(const Capabilities& caps, uint64_t large_tiles_in_c);

}  // namespace vkf::ops
