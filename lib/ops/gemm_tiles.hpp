#pragma once
#include <cstdint>
#include <string>

#include "vkformer/capabilities.hpp"

namespace vkf::ops {

// Register-blocked tile sizes for shaders/gemm.comp (specialization constants).
struct GemmTiles {
  uint32_t bm, bn, bk, tm, tn;
  uint32_t invocations() const { return (bm / tm) * (bn / tn); }
  uint32_t shared_bytes() const { return bk * (bm + bn) * 4; }
};

// Picks tiles from the device's limits and kind, for a product of `rows` rows (M) whose
// C holds `large_tiles_in_c` tiles of the large GPU configuration (small products get
// smaller tiles so a GPU has enough workgroups; on CPU drivers, few rows get short, wide
// tiles so a tile's rows are not mostly empty).
GemmTiles choose_gemm_tiles(const Capabilities& caps, uint32_t rows, uint64_t large_tiles_in_c);

// "tiled 32x128x16/4x16": the variant's strategy and tiles, for reports (bench ops).
std::string describe(const GemmTiles& t);

}  // namespace vkf::ops
