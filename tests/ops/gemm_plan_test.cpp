// gemm_plan without a device: the kernel, defines, specialisation constants, bindings and
// workgroups chosen for representative products on four capability sets, pinned; and the
// rules that pick between them (policy, tuning, alignment, split-K's limits).
#include <gtest/gtest.h>

#include <sstream>

#include "gemm_plan.hpp"
#include "ops/device_classes.hpp"
#include "vkformer/tensor_io.hpp"

namespace vkf::test {
namespace {

using ops::GemmPlan;
using ops::GemmProblem;

// A product with A, B and C packed and starting aligned, as a layer's Linear has them.
GemmProblem linear(uint32_t M, uint32_t N, uint32_t K, DType dt) {
  GemmProblem p{.g = ops::resolved_gemm({.M = M, .N = N, .K = K, .trans_b = true}), .dtype = dt};
  p.a.bytes = uint64_t(M) * K * dtype_bytes(dt);
  p.b.bytes = uint64_t(N) * K * dtype_bytes(dt);
  p.c.bytes = uint64_t(M) * N * dtype_bytes(dt);
  p.bias = true;
  return p;
}

std::string describe(const GemmPlan& p) {
  std::ostringstream s;
  s << p.shader << " [";
  for (size_t i = 0; i < p.defines.size(); ++i) s << (i ? " " : "") << p.defines[i].first << "=" << p.defines[i].second;
  s << "] spec [";
  for (size_t i = 0; i < p.spec.size(); ++i) s << (i ? " " : "") << p.spec[i];
  s << "] texels " << p.texels.size() << " bindings " << uint32_t(p.bindings) << " groups " << p.groups.x << "x"
    << p.groups.y << "x" << p.groups.z;
  if (p.split_k > 1) s << " split " << p.split_k << " reduce " << p.reduce_groups.x << "x" << p.reduce_groups.y << "x"
                       << p.reduce_groups.z;
  return s.str();
}

GemmPlan plan(const Capabilities& caps, const GemmProblem& p, const Policy& policy = {},
              const GemmTuning* tuning = nullptr) {
  return ops::gemm_plan(caps, policy, tuning, p);
}

struct Pin {
  const char* device;
  const char* product;
  DType dtype;
  std::string want;
};

// The products every family runs: a decode step's Linear (1 row; 4 rows: a beam), a
// prompt's or encoder's Linear (24 rows; 256), a Linear with its input's LayerNorm
// folded in, a gated FFN (SwiGLU) and attention's per-head products.
GemmProblem product(const std::string& name, DType dt) {
  if (name == "decode 1x2048x512") return linear(1, 2048, 512, dt);
  if (name == "beam 4x512x2048") return linear(4, 512, 2048, dt);
  if (name == "encoder 24x512x2048") return linear(24, 512, 2048, dt);
  if (name == "prompt 256x1024x1024") return linear(256, 1024, 1024, dt);
  if (name == "folded 24x1536x512") {
    GemmProblem p = linear(24, 1536, 512, dt);
    p.g.norm_of = NormOf::A;
    p.norm = true;
    return p;
  }
  if (name == "folded decode 1x1536x512") {
    GemmProblem p = linear(1, 1536, 512, dt);
    p.g.norm_of = NormOf::A;
    p.norm = true;
    return p;
  }
  if (name == "gated 24x1376x512") {
    GemmProblem p = linear(24, 1376, 512, dt);
    p.g.glu = true;
    return p;
  }
  // scores[b, h] = Q K^T: 2 x 8 heads of 17 queries by 17 keys of 64.
  Gemm qk{.M = 17, .N = 17, .K = 64, .trans_b = true, .alpha = 0.125f, .lda = 512, .ldb = 512, .batch = 2, .heads = 8};
  qk.stride_a = qk.stride_b = {17 * 512, 64};
  qk.stride_c = {8 * 17 * 17, 17 * 17};
  GemmProblem p{.g = ops::resolved_gemm(qk), .dtype = dt};
  p.a.bytes = p.b.bytes = 2 * 17 * 512 * dtype_bytes(dt);
  return p;
}

const char* kProducts[] = {"decode 1x2048x512", "beam 4x512x2048",          "encoder 24x512x2048",
                           "prompt 256x1024x1024", "folded 24x1536x512", "folded decode 1x1536x512",
                           "gated 24x1376x512",  "heads 17x17x64"};


// Pinned: a change in any choice shows here first, with what the plan now says. Why each
// is what it is: lib/ops/gemm_default_table.cpp (tiles per device class and the cards we
// tuned on), gemm_plan.cpp (the kernel and its reads for a product).
const Pin kPins[] = {
    {"lavapipe", "decode 1x2048x512", DType::F32,
     "gemm_small_m.comp [SUBGROUP_REDUCE=1 WG_SIZE=64 COLS=4 ROWS=1 VEC4_K=1 TEXEL_B=1] spec [] texels 2 bindings 9 groups 64x1x1"},
    {"lavapipe", "beam 4x512x2048", DType::F32,
     "gemm_small_m.comp [SUBGROUP_REDUCE=1 WG_SIZE=64 COLS=8 VEC4_K=1 TEXEL_B=1] spec [] texels 2 bindings 9 groups 8x1x1"},
    {"lavapipe", "encoder 24x512x2048", DType::F32,
     "gemm_direct.comp [VEC4_NT=1 SHUFFLE_A=1 TEXEL_AB=1] spec [32 16 8 8] texels 2 bindings 7 groups 2x2x1"},
    {"lavapipe", "prompt 256x1024x1024", DType::F32,
     "gemm_direct.comp [VEC4_NT=1 SHUFFLE_A=1 TEXEL_AB=1] spec [32 16 8 8] texels 2 bindings 7 groups 4x16x1"},
    {"lavapipe", "folded 24x1536x512", DType::F32,
     "gemm_direct.comp [VEC4_NT=1 NORM_FOLDED=1 NORM_SUBGROUP=1 NORM_PRIVATE_ROWS=16 SHUFFLE_A=1 TEXEL_AB=1] spec [32 16 8 8] texels 2 bindings 9 groups 6x2x1"},
    {"lavapipe", "folded decode 1x1536x512", DType::F32,
     "gemm_small_m.comp [SUBGROUP_REDUCE=1 WG_SIZE=64 COLS=4 ROWS=1 VEC4_K=1 NORM_FOLDED=1 TEXEL_B=1] spec [] texels 2 bindings 9 groups 48x1x1"},
    {"lavapipe", "gated 24x1376x512", DType::F32,
     "gemm_direct.comp [VEC4_NT=1 SHUFFLE_A=1 TEXEL_AB=1] spec [32 16 8 8] texels 2 bindings 7 groups 11x2x1"},
    {"lavapipe", "heads 17x17x64", DType::F32,
     "gemm_direct.comp [VEC4_NT=1 SHUFFLE_A=1 TEXEL_AB=1] spec [16 8 4 8] texels 2 bindings 7 groups 1x3x16"},
    {"lavapipe", "decode 1x2048x512", DType::F16,
     "gemm_small_m.comp [SUBGROUP_REDUCE=1 WG_SIZE=64 COLS=4 ROWS=1 VEC4_K=1 TEXEL_B=1] spec [] texels 2 bindings 9 groups 64x1x1"},
    {"lavapipe", "beam 4x512x2048", DType::F16,
     "gemm_small_m.comp [SUBGROUP_REDUCE=1 WG_SIZE=64 COLS=8 VEC4_K=1 TEXEL_B=1] spec [] texels 2 bindings 9 groups 8x1x1"},
    {"lavapipe", "encoder 24x512x2048", DType::F16,
     "gemm_direct.comp [VEC4_NT=1 SHUFFLE_A=1 TEXEL_AB=1] spec [32 16 8 8] texels 2 bindings 7 groups 2x2x1"},
    {"lavapipe", "prompt 256x1024x1024", DType::F16,
     "gemm_direct.comp [VEC4_NT=1 SHUFFLE_A=1 TEXEL_AB=1] spec [32 16 8 8] texels 2 bindings 7 groups 4x16x1"},
    {"lavapipe", "folded 24x1536x512", DType::F16,
     "gemm_direct.comp [VEC4_NT=1 NORM_FOLDED=1 NORM_SUBGROUP=1 NORM_PRIVATE_ROWS=16 SHUFFLE_A=1 TEXEL_AB=1] spec [32 16 8 8] texels 2 bindings 9 groups 6x2x1"},
    {"lavapipe", "folded decode 1x1536x512", DType::F16,
     "gemm_small_m.comp [SUBGROUP_REDUCE=1 WG_SIZE=64 COLS=4 ROWS=1 VEC4_K=1 NORM_FOLDED=1 TEXEL_B=1] spec [] texels 2 bindings 9 groups 48x1x1"},
    {"lavapipe", "gated 24x1376x512", DType::F16,
     "gemm_direct.comp [VEC4_NT=1 SHUFFLE_A=1 TEXEL_AB=1] spec [32 16 8 8] texels 2 bindings 7 groups 11x2x1"},
    {"lavapipe", "heads 17x17x64", DType::F16,
     "gemm_direct.comp [VEC4_NT=1 SHUFFLE_A=1 TEXEL_AB=1] spec [16 8 4 8] texels 2 bindings 7 groups 1x3x16"},
    {"portable", "decode 1x2048x512", DType::F32,
     "gemm_small_m.comp [WG_SIZE=128 LANES=32] spec [] texels 0 bindings 9 groups 512x1x1"},
    {"portable", "beam 4x512x2048", DType::F32,
     "gemm_small_m.comp [WG_SIZE=128 LANES=32] spec [] texels 0 bindings 9 groups 128x1x1"},
    {"portable", "encoder 24x512x2048", DType::F32,
     "gemm.comp [VEC4_NT=1] spec [128 64 32 16 4 4] texels 0 bindings 7 groups 16x1x1"},
    {"portable", "prompt 256x1024x1024", DType::F32,
     "gemm.comp [VEC4_NT=1] spec [128 64 32 16 4 4] texels 0 bindings 7 groups 32x4x1"},
    {"portable", "folded 24x1536x512", DType::F32,
     "gemm.comp [VEC4_NT=1 NORM_FOLDED=1 NORM_ROWS=64 NORM_PARTS=2] spec [128 64 32 16 4 4] texels 0 bindings 9 groups 48x1x1"},
    {"portable", "folded decode 1x1536x512", DType::F32,
     "gemm_small_m.comp [WG_SIZE=128 LANES=32 NORM_FOLDED=1] spec [] texels 0 bindings 9 groups 384x1x1"},
    {"portable", "gated 24x1376x512", DType::F32,
     "gemm.comp [VEC4_NT=1] spec [128 64 32 16 4 4] texels 0 bindings 7 groups 86x1x1"},
    {"portable", "heads 17x17x64", DType::F32,
     "gemm.comp [VEC4_NT=1] spec [128 64 32 16 4 4] texels 0 bindings 7 groups 1x1x16"},
    {"portable", "decode 1x2048x512", DType::F16,
     "gemm_small_m.comp [WG_SIZE=128 LANES=32] spec [] texels 0 bindings 9 groups 512x1x1"},
    {"portable", "beam 4x512x2048", DType::F16,
     "gemm_small_m.comp [WG_SIZE=128 LANES=32] spec [] texels 0 bindings 9 groups 128x1x1"},
    {"portable", "encoder 24x512x2048", DType::F16,
     "gemm.comp [VEC4_NT=1] spec [128 64 32 16 4 4] texels 0 bindings 7 groups 16x1x1"},
    {"portable", "prompt 256x1024x1024", DType::F16,
     "gemm.comp [VEC4_NT=1] spec [128 64 32 16 4 4] texels 0 bindings 7 groups 32x4x1"},
    {"portable", "folded 24x1536x512", DType::F16,
     "gemm.comp [VEC4_NT=1 NORM_FOLDED=1 NORM_ROWS=64 NORM_PARTS=2] spec [128 64 32 16 4 4] texels 0 bindings 9 groups 48x1x1"},
    {"portable", "folded decode 1x1536x512", DType::F16,
     "gemm_small_m.comp [WG_SIZE=128 LANES=32 NORM_FOLDED=1] spec [] texels 0 bindings 9 groups 384x1x1"},
    {"portable", "gated 24x1376x512", DType::F16,
     "gemm.comp [VEC4_NT=1] spec [128 64 32 16 4 4] texels 0 bindings 7 groups 86x1x1"},
    {"portable", "heads 17x17x64", DType::F16,
     "gemm.comp [VEC4_NT=1] spec [128 64 32 16 4 4] texels 0 bindings 7 groups 1x1x16"},
    {"nvidia", "decode 1x2048x512", DType::F32,
     "gemm_small_m.comp [SUBGROUP_REDUCE=1 WG_SIZE=64 COLS=4 ROWS=1 VEC4_K=1] spec [] texels 0 bindings 9 groups 256x1x1"},
    {"nvidia", "beam 4x512x2048", DType::F32,
     "gemm_small_m.comp [SUBGROUP_REDUCE=1 WG_SIZE=64 COLS=4 VEC4_K=1] spec [] texels 0 bindings 9 groups 64x1x1"},
    {"nvidia", "encoder 24x512x2048", DType::F32,
     "gemm.comp [VEC4_NT=1] spec [256 64 64 16 4 4] texels 0 bindings 7 groups 8x1x1"},
    {"nvidia", "prompt 256x1024x1024", DType::F32,
     "gemm.comp [VEC4_NT=1] spec [256 64 64 16 4 4] texels 0 bindings 7 groups 16x4x1"},
    {"nvidia", "folded 24x1536x512", DType::F32,
     "gemm.comp [VEC4_NT=1 NORM_FOLDED=1 NORM_ROWS=64 NORM_PARTS=4] spec [256 64 64 16 4 4] texels 0 bindings 9 groups 24x1x1"},
    {"nvidia", "folded decode 1x1536x512", DType::F32,
     "gemm_small_m.comp [SUBGROUP_REDUCE=1 WG_SIZE=64 COLS=4 ROWS=1 VEC4_K=1 NORM_FOLDED=1] spec [] texels 0 bindings 9 groups 192x1x1"},
    {"nvidia", "gated 24x1376x512", DType::F32,
     "gemm.comp [VEC4_NT=1] spec [256 64 64 16 4 4] texels 0 bindings 7 groups 43x1x1"},
    {"nvidia", "heads 17x17x64", DType::F32,
     "gemm.comp [VEC4_NT=1] spec [256 64 64 16 4 4] texels 0 bindings 7 groups 1x1x16"},
    {"nvidia", "decode 1x2048x512", DType::F16,
     "gemm_small_m.comp [SUBGROUP_REDUCE=1 WG_SIZE=64 COLS=4 ROWS=1 VEC4_K=1] spec [] texels 0 bindings 9 groups 256x1x1"},
    {"nvidia", "beam 4x512x2048", DType::F16,
     "gemm_small_m.comp [SUBGROUP_REDUCE=1 WG_SIZE=64 COLS=4 VEC4_K=1] spec [] texels 0 bindings 9 groups 64x1x1"},
    {"nvidia", "encoder 24x512x2048", DType::F16,
     "gemm.comp [VEC4_NT=1] spec [256 64 64 16 4 4] texels 0 bindings 7 groups 8x1x1"},
    {"nvidia", "prompt 256x1024x1024", DType::F16,
     "gemm.comp [VEC4_NT=1] spec [256 64 64 16 4 4] texels 0 bindings 7 groups 16x4x1"},
    {"nvidia", "folded 24x1536x512", DType::F16,
     "gemm.comp [VEC4_NT=1 NORM_FOLDED=1 NORM_ROWS=64 NORM_PARTS=4] spec [256 64 64 16 4 4] texels 0 bindings 9 groups 24x1x1"},
    {"nvidia", "folded decode 1x1536x512", DType::F16,
     "gemm_small_m.comp [SUBGROUP_REDUCE=1 WG_SIZE=64 COLS=4 ROWS=1 VEC4_K=1 NORM_FOLDED=1] spec [] texels 0 bindings 9 groups 192x1x1"},
    {"nvidia", "gated 24x1376x512", DType::F16,
     "gemm.comp [VEC4_NT=1] spec [256 64 64 16 4 4] texels 0 bindings 7 groups 43x1x1"},
    {"nvidia", "heads 17x17x64", DType::F16,
     "gemm.comp [VEC4_NT=1] spec [256 64 64 16 4 4] texels 0 bindings 7 groups 1x1x16"},
    {"h200", "decode 1x2048x512", DType::F32,
     "gemm_small_m.comp [SUBGROUP_REDUCE=1 WG_SIZE=64 COLS=4 ROWS=1 VEC4_K=1] spec [] texels 0 bindings 9 groups 256x1x1"},
    {"h200", "beam 4x512x2048", DType::F32,
     "gemm_small_m.comp [SUBGROUP_REDUCE=1 WG_SIZE=64 COLS=4 VEC4_K=1] spec [] texels 0 bindings 9 groups 64x1x1"},
    {"h200", "encoder 24x512x2048", DType::F32,
     "gemm.comp [VEC4_NT=1] spec [256 64 64 16 4 4] texels 0 bindings 7 groups 8x1x1"},
    {"h200", "prompt 256x1024x1024", DType::F32,
     "gemm.comp [VEC4_NT=1 SPLIT_K=4] spec [256 64 64 16 4 4] texels 0 bindings 7 groups 16x4x1 split 4 reduce 16x256x1"},
    {"h200", "folded 24x1536x512", DType::F32,
     "gemm.comp [VEC4_NT=1 NORM_FOLDED=1 NORM_ROWS=64 NORM_PARTS=4] spec [256 64 64 16 4 4] texels 0 bindings 9 groups 24x1x1"},
    {"h200", "folded decode 1x1536x512", DType::F32,
     "gemm_small_m.comp [SUBGROUP_REDUCE=1 WG_SIZE=64 COLS=4 ROWS=1 VEC4_K=1 NORM_FOLDED=1] spec [] texels 0 bindings 9 groups 192x1x1"},
    {"h200", "gated 24x1376x512", DType::F32,
     "gemm.comp [VEC4_NT=1] spec [256 64 64 16 4 4] texels 0 bindings 7 groups 43x1x1"},
    {"h200", "heads 17x17x64", DType::F32,
     "gemm.comp [VEC4_NT=1] spec [256 64 64 16 4 4] texels 0 bindings 7 groups 1x1x16"},
    {"h200", "decode 1x2048x512", DType::F16,
     "gemm_small_m.comp [SUBGROUP_REDUCE=1 WG_SIZE=64 COLS=4 ROWS=1 VEC4_K=1] spec [] texels 0 bindings 9 groups 256x1x1"},
    {"h200", "beam 4x512x2048", DType::F16,
     "gemm_small_m.comp [SUBGROUP_REDUCE=1 WG_SIZE=64 COLS=4 VEC4_K=1] spec [] texels 0 bindings 9 groups 64x1x1"},
    {"h200", "encoder 24x512x2048", DType::F16,
     "gemm_coopmat.comp [SPLIT_K=8 PREFETCH=1 PREFETCH_LAYOUT=1] spec [128 64 64 32 32 32] texels 0 bindings 7 groups 8x1x1 split 8 reduce 8x24x1"},
    {"h200", "prompt 256x1024x1024", DType::F16,
     "gemm_coopmat.comp [SPLIT_K=4 PREFETCH=1 PREFETCH_LAYOUT=1] spec [128 64 64 32 32 32] texels 0 bindings 7 groups 16x4x1 split 4 reduce 16x256x1"},
    {"h200", "folded 24x1536x512", DType::F16,
     "gemm.comp [VEC4_NT=1 NORM_FOLDED=1 NORM_ROWS=64 NORM_PARTS=4] spec [256 64 64 16 4 4] texels 0 bindings 9 groups 24x1x1"},
    {"h200", "folded decode 1x1536x512", DType::F16,
     "gemm_small_m.comp [SUBGROUP_REDUCE=1 WG_SIZE=64 COLS=4 ROWS=1 VEC4_K=1 NORM_FOLDED=1] spec [] texels 0 bindings 9 groups 192x1x1"},
    {"h200", "gated 24x1376x512", DType::F16,
     "gemm.comp [VEC4_NT=1] spec [256 64 64 16 4 4] texels 0 bindings 7 groups 43x1x1"},
    {"h200", "heads 17x17x64", DType::F16,
     "gemm_coopmat.comp [SPLIT_K=8 PREFETCH=1 PREFETCH_LAYOUT=1] spec [128 64 64 32 32 32] texels 0 bindings 7 groups 1x1x16 split 8 reduce 1x17x16"},
    {"amd", "decode 1x2048x512", DType::F32,
     "gemm_small_m.comp [SUBGROUP_REDUCE=1 WG_SIZE=64 COLS=4 ROWS=1 VEC4_K=1] spec [] texels 0 bindings 9 groups 512x1x1"},
    {"amd", "beam 4x512x2048", DType::F32,
     "gemm_small_m.comp [SUBGROUP_REDUCE=1 WG_SIZE=64 COLS=4 VEC4_K=1] spec [] texels 0 bindings 9 groups 128x1x1"},
    {"amd", "encoder 24x512x2048", DType::F32,
     "gemm.comp [VEC4_NT=1] spec [256 64 64 16 4 4] texels 0 bindings 7 groups 8x1x1"},
    {"amd", "prompt 256x1024x1024", DType::F32,
     "gemm.comp [VEC4_NT=1] spec [256 64 64 16 4 4] texels 0 bindings 7 groups 16x4x1"},
    {"amd", "folded 24x1536x512", DType::F32,
     "gemm.comp [VEC4_NT=1 NORM_FOLDED=1 NORM_ROWS=64 NORM_PARTS=4] spec [256 64 64 16 4 4] texels 0 bindings 9 groups 24x1x1"},
    {"amd", "folded decode 1x1536x512", DType::F32,
     "gemm_small_m.comp [SUBGROUP_REDUCE=1 WG_SIZE=64 COLS=4 ROWS=1 VEC4_K=1 NORM_FOLDED=1] spec [] texels 0 bindings 9 groups 384x1x1"},
    {"amd", "gated 24x1376x512", DType::F32,
     "gemm.comp [VEC4_NT=1] spec [256 64 64 16 4 4] texels 0 bindings 7 groups 43x1x1"},
    {"amd", "heads 17x17x64", DType::F32,
     "gemm.comp [VEC4_NT=1] spec [256 64 64 16 4 4] texels 0 bindings 7 groups 1x1x16"},
    {"amd", "decode 1x2048x512", DType::F16,
     "gemm_small_m.comp [SUBGROUP_REDUCE=1 WG_SIZE=64 COLS=4 ROWS=1 VEC4_K=1] spec [] texels 0 bindings 9 groups 512x1x1"},
    {"amd", "beam 4x512x2048", DType::F16,
     "gemm_small_m.comp [SUBGROUP_REDUCE=1 WG_SIZE=64 COLS=4 VEC4_K=1] spec [] texels 0 bindings 9 groups 128x1x1"},
    {"amd", "encoder 24x512x2048", DType::F16,
     "gemm.comp [VEC4_NT=1] spec [256 64 64 16 4 4] texels 0 bindings 7 groups 8x1x1"},
    {"amd", "prompt 256x1024x1024", DType::F16,
     "gemm.comp [VEC4_NT=1] spec [256 64 64 16 4 4] texels 0 bindings 7 groups 16x4x1"},
    {"amd", "folded 24x1536x512", DType::F16,
     "gemm.comp [VEC4_NT=1 NORM_FOLDED=1 NORM_ROWS=64 NORM_PARTS=4] spec [256 64 64 16 4 4] texels 0 bindings 9 groups 24x1x1"},
    {"amd", "folded decode 1x1536x512", DType::F16,
     "gemm_small_m.comp [SUBGROUP_REDUCE=1 WG_SIZE=64 COLS=4 ROWS=1 VEC4_K=1 NORM_FOLDED=1] spec [] texels 0 bindings 9 groups 384x1x1"},
    {"amd", "gated 24x1376x512", DType::F16,
     "gemm.comp [VEC4_NT=1] spec [256 64 64 16 4 4] texels 0 bindings 7 groups 43x1x1"},
    {"amd", "heads 17x17x64", DType::F16,
     "gemm.comp [VEC4_NT=1] spec [256 64 64 16 4 4] texels 0 bindings 7 groups 1x1x16"}
};

TEST(GemmPlan, PinnedForEachDeviceClass) {
  for (const Pin& pin : kPins) {
    SCOPED_TRACE(std::string(pin.device) + ", " + pin.product + (pin.dtype == DType::F16 ? ", fp16" : ", fp32"));
    EXPECT_EQ(describe(plan(device(pin.device), product(pin.product, pin.dtype))), pin.want);
  }
  EXPECT_EQ(std::size(kPins), 5u * 2 * std::size(kProducts));  // every device, storage type and product
}

// The tiles: a product's own, else the policy's, else the tuning file's for its row
// class, else the built-in table's for a tuned card, else the default table's.
TEST(GemmPlan, TilesFromTheProductThePolicyTheTuningFileThenTheTables) {
  const Capabilities nv = h200();
  GemmProblem p = linear(100, 512, 512, DType::F16);
  const GemmTiles tuned_card{64, 64, 32, 32, 32, GemmStrategy::CoopMatNV, 4, true};  // the H200's for M <= 256
  EXPECT_EQ(plan(nv, p).variant, tuned_card.name());
  GemmTuning file;
  file.tiles[1] = GemmTiles{32, 64, 16, 4, 4};
  EXPECT_EQ(plan(nv, p, {}, &file).variant, "tiled 32x64x16/4x4");
  const Policy policy{.gemm_tiles = GemmTiles{64, 32, 16, 4, 4}};
  EXPECT_EQ(plan(nv, p, policy, &file).variant, "tiled 64x32x16/4x4");
  p.g.tiles = GemmTiles{32, 128, 16, 4, 16};
  EXPECT_EQ(plan(nv, p, policy, &file).variant, "tiled 32x128x16/4x16");
  // Tiles the device cannot run are refused by name, the policy's saying whose they are.
  p.g.tiles.reset();
  try {
    plan(portable(), p, {.gemm_tiles = GemmTiles{128, 128, 16, 8, 8}});
    ADD_FAILURE() << "256 invocations planned where 128 fit";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("the policy's tiles tiled 128x128x16/8x8 (VKF_GEMM_TILES) cannot run"),
              std::string::npos) << e.what();
  }
}

// The decode-step kernel reads through buffer addresses in fp32 where the host gathers
// in hardware, unless an operand's address is not 16-byte aligned: then texels.
TEST(GemmPlan, AddressesWhereAlignedElseTexels) {
  Capabilities xeon = lavapipe();
  xeon.hardware_gathers = true;
  GemmProblem p = linear(1, 2048, 512, DType::F32);
  p.a.address = 1 << 20, p.b.address = 2 << 20;
  GemmPlan got = plan(xeon, p);
  EXPECT_EQ(got.variant, "small_m addresses");
  EXPECT_EQ(uint64_t(got.push.address_b[0]) | uint64_t(got.push.address_b[1]) << 32, p.b.address);
  EXPECT_EQ(plan(xeon, linear(1, 2048, 512, DType::F16)).variant, "small_m texels");  // fp16: 8 halves a texel
  p.b.address += 8;
  EXPECT_EQ(plan(xeon, p).variant, "small_m texels");
  p.g.address_weights = true;
  EXPECT_THROW(plan(xeon, p), Error);  // asked for, and impossible: refused, not ignored
}

// Split-K runs in one pass where its partial sums would not fit one binding.
TEST(GemmPlan, SplitKWithinOneBinding) {
  Capabilities nv = h200();
  const GemmProblem p = linear(24, 512, 2048, DType::F16);
  EXPECT_EQ(plan(nv, p).split_k, 8u);
  EXPECT_EQ(plan(nv, p).partial_bytes, 8ull * 24 * 512 * 4);
  nv.max_storage_buffer_range = 8 * 24 * 512 * 4 - 4;
  EXPECT_EQ(plan(nv, p).split_k, 1u);
  EXPECT_EQ(plan(nv, p).reduce_defines, Defines{});
}

// What no kernel can do is refused before anything is recorded.
TEST(GemmPlan, RefusesWhatNoKernelCanDo) {
  const Capabilities caps = lavapipe();
  auto refused = [&](GemmProblem p, const std::string& words) {
    try {
      plan(caps, p);
      ADD_FAILURE() << "planned: " << words;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
    }
  };
  GemmProblem p = linear(24, 512, 512, DType::F32);
  p.g.address_weights = true;
  refused(p, "only by the decode-step kernel");
  p = linear(24, 512, 512, DType::F32);
  p.g.norm_of = NormOf::A;
  refused(p, "needs its gamma and beta");
  p = linear(24, 512, 512, DType::F32);
  p.g.glu = true;
  p.g.N = 40u << 20;  // 2N rows of 512 fp32: far past a 128 MiB binding
  refused(p, "larger than one binding");
  p = linear(24, 512, 512, DType::F32);
  p.stats_in_parts = 4;
  refused(p, "row statistics in need a folded norm");
  EXPECT_THROW(ops::resolved_gemm({.M = 0}), Error);
}

// A weight in blocks: CPU drivers' decode-step kernel at 1 to 32 rows (rows interleaved in
// 16s, fewer invocations a workgroup where N is small), the small-M kernel over row-major
// blocks elsewhere and with a folded norm; past the rows a kernel reads, refused (Ops
// dequantizes such a weight first).
TEST(GemmPlan, WeightsInBlocks) {
  auto blocks = [](uint32_t M, uint32_t N, uint32_t K, BlockType t) {
    GemmProblem p = linear(M, N, K, DType::F16);
    p.g.b_blocks = t;
    p.b.bytes = block_weight_bytes(t, N, K);
    return p;
  };
  EXPECT_EQ(describe(plan(lavapipe(), blocks(1, 1536, 576, BlockType::Q4_0))),
            "gemm_columns.comp [WG_SIZE=32 ROWS=1 COLS=4 SG=8 QTYPE=1 Q_CODE_WORDS=4 Q_OFFSET=8.0 Q_INTERLEAVE=16u "
            "TEXEL_B=1 TEXEL_A=1] spec [] texels 2 bindings 7 groups 12x1x1");
  // Four sums an invocation on the decode step: a gated product's two columns and their ups.
  GemmProblem gated = blocks(2, 1536, 512, BlockType::Q4_K);
  gated.g.glu = true;
  EXPECT_EQ(describe(plan(lavapipe(), gated)),
            "gemm_columns.comp [WG_SIZE=64 ROWS=2 COLS=2 SG=8 GLU=1 QTYPE=5 Q_CODE_WORDS=4 Q_OFFSET=0.0 Q_MIN=1 Q_SUPER=1 "
            "Q_INTERLEAVE=16u TEXEL_B=1 TEXEL_A=1] spec [] texels 2 bindings 7 groups 12x1x1");
  EXPECT_EQ(describe(plan(lavapipe(), blocks(16, 576, 1536, BlockType::Q8_0))),
            "gemm_columns.comp [WG_SIZE=32 ROWS=16 COLS=2 SG=8 QTYPE=0 Q_CODE_WORDS=8 Q_OFFSET=0.0 Q_INTERLEAVE=16u "
            "TEXEL_B=1 TEXEL_A=1] spec [] texels 2 bindings 7 groups 9x1x1");
  // A is read as texels beside B where its view holds whole ones from an aligned start.
  const GemmPlan both = plan(lavapipe(), blocks(1, 1536, 576, BlockType::Q4_0));
  EXPECT_EQ(both.texels[0], TexelFormat::Rgba32Ui);
  EXPECT_EQ(both.texels[1], TexelFormat::Rgba32Ui);
  GemmProblem unaligned = blocks(1, 1536, 576, BlockType::Q4_0);
  unaligned.a.start = 8;
  const GemmPlan b_only = plan(lavapipe(), unaligned);
  EXPECT_EQ(b_only.texels[0], TexelFormat::None);
  EXPECT_EQ(describe(b_only).find("TEXEL_A"), std::string::npos);
  GemmProblem no_texels = blocks(1, 1536, 576, BlockType::Q4_0);
  no_texels.g.texel_weights = false;
  EXPECT_EQ(describe(plan(lavapipe(), no_texels)).find("TEXEL_"), std::string::npos);
  // Neighbouring rows share their top bits' fetch on the decode step when N is even.
  EXPECT_NE(describe(plan(lavapipe(), blocks(1, 1536, 512, BlockType::Q6_K))).find(" PAIRED_ROWS=1"), std::string::npos);
  EXPECT_NE(describe(plan(lavapipe(), blocks(2, 1536, 96, BlockType::Q5_0))).find(" PAIRED_ROWS=1"), std::string::npos);
  EXPECT_EQ(describe(plan(lavapipe(), blocks(1, 1537, 512, BlockType::Q6_K))).find("PAIRED_ROWS"), std::string::npos);
  EXPECT_EQ(describe(plan(lavapipe(), blocks(3, 1536, 512, BlockType::Q6_K))).find("PAIRED_ROWS"), std::string::npos);
  // Row counts past 2 share the variant of the next power of two (the kernel skips the rest).
  EXPECT_NE(describe(plan(lavapipe(), blocks(17, 576, 1536, BlockType::Q8_0))).find(" ROWS=32 "), std::string::npos);
  EXPECT_NE(describe(plan(lavapipe(), blocks(3, 576, 1536, BlockType::Q8_0))).find(" ROWS=4 "), std::string::npos);
  EXPECT_EQ(plan(portable(), blocks(1, 1536, 576, BlockType::Q4_0)).variant, "small_m q4_0");
  // A run of the subgroup's 16-byte units of A must hold a whole block: 8 lanes at least.
  Capabilities narrow = lavapipe();
  narrow.subgroup_size = narrow.min_subgroup_size = narrow.max_subgroup_size = 4;
  EXPECT_EQ(plan(narrow, blocks(1, 1536, 576, BlockType::Q4_0)).variant, "small_m q4_0 texels");
  Capabilities avx512 = lavapipe();
  avx512.subgroup_size = avx512.min_subgroup_size = avx512.max_subgroup_size = 16;
  EXPECT_NE(describe(plan(avx512, blocks(1, 1536, 576, BlockType::Q4_0))).find(" SG=16 "), std::string::npos);
  EXPECT_EQ(plan(nvidia_like(), blocks(4, 1536, 576, BlockType::Q5_1)).variant, "small_m q5_1");
  GemmProblem folded = blocks(1, 1536, 576, BlockType::Q8_0);
  folded.g.norm_of = NormOf::A;
  folded.norm = true;
  EXPECT_EQ(plan(lavapipe(), folded).variant, "small_m q8_0 texels");
  EXPECT_TRUE(ops::gemm_columns_take(lavapipe(), blocks(32, 64, 64, BlockType::Q4_1).g));
  // A prompt's product: the direct kernel reading the blocks (a folded norm's too).
  EXPECT_EQ(plan(lavapipe(), blocks(300, 576, 64, BlockType::Q4_1)).shader, "gemm_direct.comp");
  EXPECT_NE(plan(lavapipe(), blocks(300, 576, 256, BlockType::Q4_K)).variant.find(" q4_k"), std::string::npos);
  EXPECT_FALSE(ops::gemm_columns_take(lavapipe(), linear(16, 64, 64, DType::F32).g));  // plain weights: the direct kernel
  // GPUs and the portable profile: the tiles' kernel (tiled or cooperative-matrix)
  // dequantizing each vec4 of B's tile as it loads it.
  EXPECT_EQ(describe(plan(nvidia_like(), blocks(33, 64, 64, BlockType::Q4_1))),
            "gemm.comp [VEC4_NT=1 QTYPE=2 Q_CODE_WORDS=4 Q_OFFSET=0.0 Q_MIN=1 Q_INTERLEAVE=1u] spec [256 64 64 16 4 4] "
            "texels 0 bindings 7 groups 1x1x1");
  EXPECT_EQ(describe(plan(portable(), blocks(5, 64, 64, BlockType::Q4_1))),
            "gemm.comp [VEC4_NT=1 QTYPE=2 Q_CODE_WORDS=4 Q_OFFSET=0.0 Q_MIN=1 Q_INTERLEAVE=1u] spec [128 64 32 16 4 4] "
            "texels 0 bindings 7 groups 2x1x1");
  // The cooperative-matrix kernel stages a K-quant's tile a vec4 at a time: never WIDE.
  GemmProblem coopmat = blocks(300, 576, 512, BlockType::Q6_K);
  coopmat.g.tiles = GemmTiles{128, 128, 32, 64, 64, GemmStrategy::CoopMatNV, 1, true, true};
  EXPECT_EQ(describe(plan(nvidia_like(), coopmat)),
            "gemm_coopmat.comp [PREFETCH=1 PREFETCH_LAYOUT=1 QTYPE=7 Q_CODE_WORDS=4 Q_OFFSET=32.0 Q_HIGH_PAIRS=1 "
            "Q_SUPER=1 Q_INTERLEAVE=1u] spec [128 128 128 32 64 64] texels 0 bindings 7 groups 5x3x1");
  coopmat.g.tiles->wide = false;
  EXPECT_EQ(describe(plan(nvidia_like(), coopmat)).find("WIDE"), std::string::npos);
  GemmProblem folded_prompt = blocks(9, 64, 64, BlockType::Q4_1);
  folded_prompt.g.norm_of = NormOf::A;
  folded_prompt.norm = true;
  EXPECT_EQ(plan(lavapipe(), folded_prompt).shader, "gemm_direct.comp");  // a folded norm past 4 rows
  EXPECT_EQ(describe(plan(nvidia_like(), folded_prompt)),
            "gemm.comp [VEC4_NT=1 NORM_FOLDED=1 NORM_ROWS=64 NORM_PARTS=4 QTYPE=2 Q_CODE_WORDS=4 Q_OFFSET=0.0 Q_MIN=1 "
            "Q_INTERLEAVE=1u] spec [256 64 64 16 4 4] texels 0 bindings 9 groups 1x1x1");
}

// A Linear weight past one binding runs in slices of whole rows (64 at a time where
// they fit); a gated product never slices (its plan refuses).
TEST(GemmPlan, WeightsPastOneBindingInSlicesOfRows) {
  const Capabilities caps = portable();  // 128 MiB bindings
  const Gemm g = ops::resolved_gemm({.M = 1, .N = 50000, .K = 1024, .trans_b = true});
  const uint64_t bytes = uint64_t(g.N) * g.K * 4;
  EXPECT_EQ(ops::gemm_weight_slice_rows(caps, g, DType::F32, bytes, false), 32768u);  // 128 MiB / 4 KiB rows
  EXPECT_EQ(ops::gemm_weight_slice_rows(caps, g, DType::F16, bytes / 2, false), std::nullopt);
  Gemm gated = g;
  gated.glu = true;
  EXPECT_EQ(ops::gemm_weight_slice_rows(caps, gated, DType::F32, bytes, false), std::nullopt);
}

}  // namespace
}  // namespace vkf::test
