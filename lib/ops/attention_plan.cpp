#include "attention_plan.hpp"

#include <algorithm>
#include <cmath>

#include "grid.hpp"
#include "texels.hpp"

namespace vkf {

namespace {

// The kernels' block sizes on a device.
constexpr uint32_t kDirectQueries = 4;  // attention_direct.comp: queries per workgroup (TQ)
constexpr uint32_t kTiledQueries = 16, kTiledInvocations = 64;  // attention_tiled.comp: BQ, WG

uint32_t rows_block_queries(const Capabilities& caps) { return std::min<uint32_t>(64, caps.max_workgroup_invocations); }
uint32_t rows_block_keys(const Capabilities& caps, uint32_t head_dim) {
  const uint32_t shared = std::min<uint32_t>(caps.max_shared_memory, 16384);
  return std::clamp<uint32_t>(shared / (2 * 4 * head_dim), 1, 64);
}
uint64_t tiled_shared_bytes(uint32_t head_dim, uint32_t bkv) {
  return 4ull * (2ull * bkv * (head_dim + 1) + uint64_t(kTiledQueries) * (bkv + 1));
}
// The largest block of keys (64 down to 8) whose tiles fit the shared memory; 0: none.
uint32_t tiled_block_keys(const Capabilities& caps, uint32_t head_dim) {
  for (uint32_t bkv = 64; bkv >= 8; bkv /= 2)
    if (tiled_shared_bytes(head_dim, bkv) <= caps.max_shared_memory) return bkv;
  return 0;
}

uint32_t u32(uint64_t v) {
  if (v > 0xffffffffull) throw Error("attention: a stride does not fit 32 bits");
  return uint32_t(v);
}

}  // namespace

std::string attention_kernel_problem(const Capabilities& caps, AttentionKernel kernel, uint32_t head_dim, DType) {
  if (head_dim < 1 || head_dim > Ops::kMaxFusedHeadDim)
    return "head_dim " + std::to_string(head_dim) + " is outside 1.." + std::to_string(Ops::kMaxFusedHeadDim) +
           " (queries and outputs live in registers)";
  switch (kernel) {
    case AttentionKernel::Rows:
      if (caps.max_workgroup_invocations < 32) return "fewer than 32 invocations per workgroup";
      if (2ull * head_dim * 4 > caps.max_shared_memory) return "too little shared memory for one key and value";
      return "";
    case AttentionKernel::Tiled:
      if (caps.max_workgroup_invocations < kTiledInvocations || caps.max_workgroup_size[0] < kTiledInvocations)
        return "fewer than " + std::to_string(kTiledInvocations) + " invocations per workgroup";
      if (!tiled_block_keys(caps, head_dim))
        return std::to_string(tiled_shared_bytes(head_dim, 8)) + " bytes of shared memory for 8 keys, more than the "
               "device's " + std::to_string(caps.max_shared_memory);
      return "";
    case AttentionKernel::Direct:
      if (!caps.subgroup_basic || !caps.subgroup_shuffle || !caps.subgroup_arithmetic)
        return "needs subgroup shuffles and arithmetic in compute shaders";
      if (caps.min_subgroup_size != caps.max_subgroup_size || caps.subgroup_size < 4 || caps.subgroup_size > 64)
        return "needs one fixed subgroup size from 4 to 64 (the workgroup is one subgroup)";
      return "";
  }
  return "unknown kernel";
}

namespace ops {

// Fills the packed defaults (Q and O [B, L, H*d], K and V [B, L, kv_heads*d]) and
// checks the head counts.
Attention resolved_attention(const Attention& a0) {
  Attention a = a0;
  if (a.batch == 0 || a.heads == 0 || a.head_dim == 0 || a.q_len == 0 || a.kv_len == 0)
    throw Error("attention: batch, heads, head_dim, q_len and kv_len must be at least 1");
  if (!a.kv_heads) a.kv_heads = a.heads;
  if (a.kv_heads > a.heads || a.heads % a.kv_heads)
    throw Error("attention: kv_heads (" + std::to_string(a.kv_heads) + ") must divide heads (" +
                std::to_string(a.heads) + ")");
  const uint64_t width = uint64_t(a.heads) * a.head_dim, kv_width = uint64_t(a.kv_heads) * a.head_dim;
  if (!a.scale) a.scale = float(1.0 / std::sqrt(double(a.head_dim)));
  if (!a.q_row_stride) a.q_row_stride = width;
  if (!a.q_batch_stride) a.q_batch_stride = a.q_len * a.q_row_stride;
  if (!a.kv_row_stride) a.kv_row_stride = kv_width;
  if (!a.kv_head_stride) a.kv_head_stride = a.head_dim;
  if (!a.kv_batch_stride) a.kv_batch_stride = a.kv_len * a.kv_row_stride;
  if (!a.o_row_stride) a.o_row_stride = width;
  if (!a.o_batch_stride) a.o_batch_stride = a.q_len * a.o_row_stride;
  return a;
}

AttentionKernel default_attention_kernel(const Capabilities& caps, const Attention& a, DType dtype) {
  // CPU drivers: the kernel without barriers (lavapipe pays a coroutine switch per SIMD
  // chunk at each one); GPUs: flash-attention-2's tiles; the rows kernel where neither fits.
  if (caps.type == DeviceType::Cpu && attention_kernel_problem(caps, AttentionKernel::Direct, a.head_dim, dtype).empty())
    return AttentionKernel::Direct;
  if (attention_kernel_problem(caps, AttentionKernel::Tiled, a.head_dim, dtype).empty()) return AttentionKernel::Tiled;
  return AttentionKernel::Rows;
}

AttentionKernel planned_attention_kernel(const Capabilities& caps, const GemmTuning* tuning, const Attention& a,
                                         DType dtype) {
  if (a.kernel) {
    if (const std::string why = attention_kernel_problem(caps, *a.kernel, a.head_dim, dtype); !why.empty())
      throw Error(std::string("attention: the ") + attention_kernel_name(*a.kernel) + " kernel cannot run on '" +
                  caps.name + "': " + why);
    return *a.kernel;
  }
  if (tuning)
    if (const auto& k = tuning->attention[attention_length_class(a.q_len)])
      if (attention_kernel_problem(caps, *k, a.head_dim, dtype).empty()) return *k;
  return default_attention_kernel(caps, a, dtype);
}

AttentionPlan attention_plan(const Capabilities& caps, const GemmTuning* tuning, const AttentionProblem& p) {
  const Attention& a = p.a;
  AttentionPlan plan;
  plan.kernel = planned_attention_kernel(caps, tuning, a, p.dtype);
  plan.push = {a.q_len, a.kv_len, a.scale, a.causal_offset,
               (p.mask ? 1u : 0u) | (a.causal ? 2u : 0u) | (p.step ? 4u : 0u) | (p.bias ? 8u : 0u),  // FLAG_* in the kernels
               u32(a.q_batch_stride), u32(a.q_row_stride), u32(a.kv_batch_stride), u32(a.kv_head_stride),
               u32(a.kv_row_stride), u32(a.o_batch_stride), u32(a.o_row_stride), p.q.base, p.k.base, p.v.base,
               p.o.base, a.heads / a.kv_heads, p.bias ? p.bias->positions : 0u, p.bias ? p.bias->origin : 0u};
  const std::string hd = std::to_string(a.head_dim);
  uint32_t rows_per_group = 0;
  plan.label = std::string("attention ") + attention_kernel_name(plan.kernel);
  switch (plan.kernel) {
    case AttentionKernel::Direct: {
      // One query a workgroup for a decode step's single query (of four, three would be
      // computed for nothing). K and V as texels on CPU drivers where their rows lie on
      // whole texels (TEXEL_KV in the kernel; lavapipe, Mesa 25.0.7, 2-core Xeon, 8 heads
      // of 64: one query over 128 keys 217-248 us from storage buffers, 86 from texels;
      // 256 causal queries 5.3 ms, 3.7; 1024: 79 ms, 43).
      rows_per_group = a.q_len == 1 ? 1 : kDirectQueries;
      const uint32_t sg = caps.subgroup_size;
      auto on_texels = [&](const GemmOperand& o) {
        return o.base % 4 == 0 && texel_view_fits(caps, o.start, o.bytes) && (p.dtype != DType::F16 || o.bytes % 16 == 0);
      };
      const bool texels = caps.type == DeviceType::Cpu && a.head_dim % (4 * sg) == 0 && a.kv_row_stride % 4 == 0 &&
                          a.kv_head_stride % 4 == 0 && a.kv_batch_stride % 4 == 0 && on_texels(p.k) && on_texels(p.v);
      plan.shader = "attention_direct.comp";
      plan.defines = {{"HEAD_DIM", hd}, {"TQ", std::to_string(rows_per_group)}, {"SG", std::to_string(sg)}};
      if (texels) {
        plan.defines.emplace_back("TEXEL_KV", "1");
        plan.label += " texels";
        const TexelFormat f = p.dtype == DType::F16 ? TexelFormat::Rgba32Ui : TexelFormat::Rgba32F;
        plan.texels = {TexelFormat::None, f, f};
      }
      break;
    }
    case AttentionKernel::Tiled:
      rows_per_group = kTiledQueries;
      plan.shader = "attention_tiled.comp";
      plan.defines = {{"HEAD_DIM", hd}, {"BQ", std::to_string(kTiledQueries)}, {"WG", std::to_string(kTiledInvocations)},
                      {"BKV", std::to_string(tiled_block_keys(caps, a.head_dim))}};
      break;
    case AttentionKernel::Rows:
      rows_per_group = rows_block_queries(caps);
      plan.shader = "attention.comp";
      plan.defines = {{"HEAD_DIM", hd}, {"BQ", std::to_string(rows_per_group)},
                      {"BKV", std::to_string(rows_block_keys(caps, a.head_dim))}};
      break;
  }
  plan.groups = {uint32_t(ceil_div(a.q_len, rows_per_group)), a.heads, a.batch};
  return plan;
}

}  // namespace ops

}  // namespace vkf
