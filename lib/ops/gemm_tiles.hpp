#pragma once
#include <cstdint>
#include <string>

#include <optional>

#include "vkformer/capabilities.hpp"
#include "vkformer/gemm_tuning.hpp"
#include "vkformer/ops.hpp"

namespace vkf::ops {

// The default table: tiles from the device's limits and kind, for a product of `rows`
// rows (M) and `cols` columns (N) whose C holds `large_tiles_in_c` tiles of the large GPU configuration (small
// products get smaller tiles so a GPU has enough workgroups; on CPU drivers, few rows get
// short, wide tiles so a tile's rows are not mostly empty). Policy::gemm_tiles (VKF_GEMM_TILES) is taken before it (Ops::gemm_tiles).
GemmTiles choose_gemm_tiles(const Capabilities& caps, DType precision, uint32_t rows, uint32_t cols,
                            uint64_t large_tiles_in_c);

// Whether the direct kernel with these tiles hands rows of A between lanes with
// subgroupShuffle (a fixed subgroup size dividing TM and the workgroup, and shuffles
// offered), which is what makes it fast on CPU drivers; it is correct either way.
bool direct_gemm_shuffles(const Capabilities& caps, const GemmTiles& tiles);

// The device's tuning file for `precision`, read once per process (load_gemm_tuning: a
// bad one is ignored with a warning, once); save_gemm_tuning replaces what it holds, so
// a tune takes effect at once in the process that ran it.
std::optional<GemmTuning> cached_gemm_tuning(const Context& ctx, DType precision);

}  // namespace vkf::ops
