// The default GEMM table (lib/ops/gemm_tiles.hpp): the variant each device class runs
// when no tuning file names one, and the direct kernel's shuffle rule it relies on.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "gemm_tiles.hpp"
#include "vkformer/gemm_tuning.hpp"

namespace vkf {

namespace ops {

bool direct_gemm_shuffles(const Capabilities& caps, const GemmTiles& t) {
  const uint32_t sg = caps.subgroup_size;
  return t.strategy == GemmStrategy::Direct && caps.subgroup_basic && caps.subgroup_shuffle &&
         caps.min_subgroup_size == caps.max_subgroup_size && sg && t.tm % sg == 0 && t.invocations() % sg == 0;
}

GemmTiles choose_gemm_tiles(const Capabilities& caps, DType precision, uint32_t rows, uint32_t cols,
                            uint64_t large_tiles_in_c) {
  GemmTiles large{128, 128, 16, 8, 8}, medium{64, 64, 16, 4, 4}, small{64, 32, 16, 4, 4};
  if (caps.type == DeviceType::Cpu) {
    // The direct kernel where its rows of A can be shuffled between lanes (every CPU
    // driver we know of). lavapipe (Mesa 25.0.7, 2 cores, GFLOP/s, the tiled choice below
    // in brackets): M <= 64, 8 rows by 64 columns, 4 per invocation: 27-30 at M = 24
    // (8-13), 16x64 2 per invocation: 33-37 at M = 32 and 256 and at squares of 256 to
    // 2048 (16.5-18.7). 8 rows keep a 24-row product free of empty rows.
    // Since A and B are read as texels there (direct_texels; AMD EPYC, same Mesa, fp32),
    // wider tiles pay: with more than 128 columns, 16x256 with 8 per invocation ran 21-23
    // at squares of 256 to 1024 and 17-23 at M = 24 to 256 (the tiles above with texels:
    // 15.9-16.8; without: 10.2-13; 8x128 with 8: 17.5-17.8). One tile for every row count,
    // so that a warm-up's short source compiles what longer ones run (the tuning file's
    // row classes may still differ). Up to 128 columns a wide tile is mostly empty: the
    // tiles above (64^3: 8.4 where 16x256 ran 4.2).
    // A CPU driver compiles for the host, so its host is its device class: on a Xeon
    // with AVX-512 (32 vector registers where AVX2 has 16; same Mesa, 2 cores), fp32,
    // 16x256 with 8 ran 42-48 at squares of 512 and 1024 and 42-46 at M = 256, and 24
    // rows by 128 with 4 per invocation (96 accumulators) 52-62 and 52-60; 24 rows by
    // 256 with 4 the same; 32 or 48 rows, or 24 with 8, 17-19 (the shuffled rows and
    // the accumulators outgrow the registers). It costs M = 32 a third tile of
    // padding: 36 where 16x256 ran 44, still twice the target (README). fp16 storage
    // there keeps 16x256: 56-59 at those squares and M = 256 where 24x128 ran 47-58.
    const GemmTiles direct_few{8, 64, 4, 8, 4, GemmStrategy::Direct}, direct{16, 64, 4, 16, 2, GemmStrategy::Direct};
    const GemmTiles wide = caps.host_avx512 && precision == DType::F32
                               ? GemmTiles{24, 128, 4, 24, 4, GemmStrategy::Direct}
                               : GemmTiles{16, 256, 4, 16, 8, GemmStrategy::Direct};
    const GemmTiles& d = cols > 128 ? wide : rows <= 64 ? direct_few : direct;
    if (gemm_tiles_problem(caps, d, precision).empty() && direct_gemm_shuffles(caps, d)) return d;
    // Without shuffles, the best tiled tiles by rows (same machine; the old single
    // 128x64 tile in brackets): M <= 32, 32x128 with 4x16 per invocation: 8.3-13
    // (3.4-4.6; 32x64 4x8: 8-11); M > 64, 128x64 with 8x8: 16.5 at M = 256 (64x128 4x16:
    // 13.9). 32x128 up to 64 rows, where 128x64 would leave half of each tile empty.
    if (rows <= 64) return {32, 128, 16, 4, 16};
    return {128, 64, 16, 8, 8};
  }
  auto fits = [&](const GemmTiles& t) {
    return t.invocations() <= caps.max_workgroup_invocations && t.shared_bytes() <= caps.max_shared_memory &&
           t.invocations() <= caps.max_workgroup_size[0];
  };
  if (large_tiles_in_c >= 32 && fits(large)) return large;
  if (fits(medium)) return medium;
  if (fits(small)) return small;
  return {32, 32, 8, 4, 4};  // 64 invocations, 2 KiB: fits every Vulkan device
}

}  // namespace ops

// Cards we have tuned on: `vkformer tune --precision P --budget-s N` on the card, each
// winner verified there against the double reference and confirmed in three alternating
// rounds (tools/gpu_check.sh; its logs give every candidate's time). Per row class:
// M <= 64, M <= 256, M > 256; {} keeps the default table's choice.
namespace {
struct TunedDevice {
  uint32_t vendor_id, device_id;
  DType precision;
  GemmTiles by_rows[3];
};
constexpr GemmTiles kCoopPrefetch{64, 64, 32, 32, 32, GemmStrategy::CoopMatNV, 1, true};
constexpr GemmTiles kCoopSplit4Prefetch{64, 64, 32, 32, 32, GemmStrategy::CoopMatNV, 4, true};
constexpr GemmTiles kCoopSplit8Prefetch{64, 64, 32, 32, 32, GemmStrategy::CoopMatNV, 8, true};
const TunedDevice kTunedDevices[] = {
    // NVIDIA H200 (0x2335), driver 580.159.04, 2026-11-27. fp16 (a third tune, after the
    // GPU builds' loops were unrolled, types.glsl): cooperative matrices with prefetch won
    // every class, 4.7-4.8x the default, split 8 at 24x2048x512 (26.3 us; without prefetch
    // 27.6), split 4 at 256x2048x512 (105.8; 113.3) and none at 1024x512x512 (75.6; split
    // 4 without prefetch 80.5). fp32 (the first two tunes): they disagreed (M <= 256:
    // tiled 64x64x16/4x4 split 4, 3.7x, or direct 8x32x4/8x2, 2.9x; M > 256: tiled 64x32,
    // 2.4x, or tiled 32x32x8 split 4, 4.4x), as on a latency-bound card they may. Here:
    // the second tune's for M <= 256 (256x2048x512 in `bench ops`: 90 us, direct 8x32: 118
    // us) and the first's above (4096^3: 16.2 TFLOP/s, tiled 64x32: 8.4); M <= 64 kept the
    // default in both. (The third's fp32 tune ran out of its 30 s before the split-K designs.)
    {0x10de, 0x2335, DType::F16, {kCoopSplit8Prefetch, kCoopSplit4Prefetch, kCoopPrefetch}},
    {0x10de, 0x2335, DType::F32, {{}, {64, 64, 16, 4, 4, GemmStrategy::Tiled, 4}, {32, 32, 8, 4, 4, GemmStrategy::Tiled, 4}}},
    // NVIDIA H100 80GB HBM3 (0x2330), driver 580.159.04, 2026-11-27, one tune: fp16 as on
    // the H200, cooperative matrices with prefetch in every class, 4.8x the default at
    // 24x2048x512 (split 8: 26.6 us), 5.5x at 256x2048x512 (none: 85.2) and 10.5x at
    // 1024x512x512 (split 4: 83.9). fp32 not yet: its tune ran before the loops were
    // unrolled, which made the tiled kernels 2-4x faster there.
    {0x10de, 0x2330, DType::F16, {kCoopSplit8Prefetch, kCoopPrefetch, kCoopSplit4Prefetch}},
};
}  // namespace

std::optional<GemmTiles> tuned_device_tiles(const Capabilities& caps, DType precision, uint32_t rows) {
  for (const TunedDevice& d : kTunedDevices) {
    if (d.vendor_id != caps.vendor_id || d.device_id != caps.device_id || d.precision != precision) continue;
    const GemmTiles& t = d.by_rows[gemm_row_class(rows)];
    if (!t.bm || !gemm_tiles_problem(caps, t, precision).empty()) return std::nullopt;
    return t;
  }
  return std::nullopt;
}

}  // namespace vkf
