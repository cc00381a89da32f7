// Which tiles a product runs (a product's own, the policy's, the device's tuning file, the
// tuned-device table, else the class default), and where a weight past one binding is
// cut into slices of rows: the choices the plan (gemm_plan.cpp) starts from.
#include <algorithm>
#include <string>

#include "gemm_plan.hpp"
#include "gemm_tiles.hpp"
#include "vkformer/tensor_io.hpp"

namespace vkf::ops {

namespace {

std::string device(const Capabilities& caps) { return "device '" + caps.name + "'"; }

}  // namespace

GemmTiles default_gemm_tiles(const Capabilities& caps, const Gemm& g, DType dtype) {
  const uint64_t large_tiles = uint64_t((g.M + 127) / 128) * ((g.N + 127) / 128) * g.batch * g.heads;
  return choose_gemm_tiles(caps, dtype, g.M, g.N, large_tiles);
}

GemmTiles planned_gemm_tiles(const Capabilities& caps, const Policy& policy, const GemmTuning* tuning, const Gemm& g,
                             DType dtype) {
  if (g.tiles) {
    if (const std::string problem = gemm_tiles_problem(caps, *g.tiles, dtype); !problem.empty())
      throw Error("gemm: tiles " + g.tiles->name() + " cannot run on " + device(caps) + ": " + problem);
    return *g.tiles;
  }
  if (const auto& t = policy.gemm_tiles) {
    if (const std::string problem = gemm_tiles_problem(caps, *t, dtype); !problem.empty())
      throw Error("gemm: the policy's tiles " + t->name() + " (VKF_GEMM_TILES) cannot run on " + device(caps) + ": " +
                  problem);
    return *t;
  }
  if (tuning)
    if (const auto& t = tuning->tiles[gemm_row_class(g.M)]) return *t;
  if (const auto t = tuned_device_tiles(caps, dtype, g.M)) return *t;
  return default_gemm_tiles(caps, g, dtype);
}

std::optional<uint32_t> gemm_weight_slice_rows(const Capabilities& caps, const Gemm& g, DType dtype, uint64_t b_bytes,
                                               bool step) {
  const uint64_t e = dtype_bytes(dtype), range = caps.max_storage_buffer_range;
  if (!(g.trans_b && !g.glu && !g.b_blocks && g.batch == 1 && g.heads == 1 && !g.split.column && g.norm_of != NormOf::Residual && !step &&
        b_bytes > range && uint64_t(g.N) * g.ldb * e > range))
    return std::nullopt;
  const uint64_t fit = range / (uint64_t(g.ldb) * e);  // rows of B one binding holds
  if (fit == 0) throw Error("gemm: a single row of B is larger than one binding of " + device(caps));
  return uint32_t(std::min<uint64_t>(fit >= 64 ? fit / 64 * 64 : fit, g.N));
}

}  // namespace vkf::ops
