// Multi-head attention: the fused online-softmax kernel, and the unfused GEMM +
// softmax + GEMM path it is tested and benchmarked against. Models need the fused
// kernel (a replayed decode step has no unfused form) and check that it fits at load.
#include <algorithm>
#include <cmath>

#include "gemm_tiles.hpp"
#include "grid.hpp"
#include "texels.hpp"
#include "vkformer/gemm_tuning.hpp"
#include "vkformer/ops.hpp"

namespace vkf {

namespace {

// Fills the packed defaults (Q and O [B, L, H*d], K and V [B, L, kv_heads*d]) and
// checks the head counts.
Attention resolve(const Attention& a0) {
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

// The view from `bytes` on (the operands of one query head of each group).
BufferView from(const BufferView& v, uint64_t bytes) {
  if (bytes > v.size) throw Error("attention: a view is too small for its heads");
  return {v.alloc, v.offset + bytes, v.size - bytes};
}

uint32_t u32(uint64_t v) {
  if (v > 0xffffffffull) throw Error("attention: a stride does not fit 32 bits");
  return uint32_t(v);
}

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

AttentionKernel Ops::attention_kernel(const Attention& a) const {
  const auto& caps = ctx_.capabilities();
  if (a.kernel) {
    if (const std::string why = attention_kernel_problem(caps, *a.kernel, a.head_dim, dtype_); !why.empty())
      throw Error(std::string("attention: the ") + attention_kernel_name(*a.kernel) + " kernel cannot run on '" +
                  caps.name + "': " + why);
    return *a.kernel;
  }
  if (const auto tuned = ops::cached_gemm_tuning(ctx_, dtype_))
    if (const auto& k = tuned->attention[attention_length_class(a.q_len)])
      if (attention_kernel_problem(caps, *k, a.head_dim, dtype_).empty()) return *k;
  return default_attention_kernel(a);
}

AttentionKernel Ops::default_attention_kernel(const Attention& a) const {
  const auto& caps = ctx_.capabilities();
  // CPU drivers: the kernel without barriers (lavapipe pays a coroutine switch per SIMD
  // chunk at each one); GPUs: flash-attention-2's tiles; the rows kernel where neither fits.
  if (caps.type == DeviceType::Cpu && attention_kernel_problem(caps, AttentionKernel::Direct, a.head_dim, dtype_).empty())
    return AttentionKernel::Direct;
  if (attention_kernel_problem(caps, AttentionKernel::Tiled, a.head_dim, dtype_).empty()) return AttentionKernel::Tiled;
  return AttentionKernel::Rows;
}

bool Ops::fused_attention_fits(uint32_t head_dim) const {
  for (AttentionKernel k : kAttentionKernels)
    if (attention_kernel_problem(ctx_.capabilities(), k, head_dim, dtype_).empty()) return true;
  return false;
}

void Ops::attention(CommandList& cl, const Attention& a0, const BufferView& q, const BufferView& k,
                    const BufferView& v, const BufferView& o, const std::optional<BufferView>& key_padding_mask,
                    const std::optional<DecodeStep>& step) {
  const Attention a = resolve(a0);
  const uint64_t width = uint64_t(a.heads) * a.head_dim;
  if (step && uint64_t(step->max_step) + a.q_len > a.kv_len)
    throw Error("attention: a decode step up to " + std::to_string(step->max_step) + " with " + std::to_string(a.q_len) +
                " queries needs kv_len of at least " + std::to_string(uint64_t(step->max_step) + a.q_len));
  need(q, (a.batch - 1) * a.q_batch_stride + (a.q_len - 1) * a.q_row_stride + width, "attention", "q");
  if (step) need_step(*step, "attention");
  const uint64_t kv = (a.batch - 1) * a.kv_batch_stride + (a.kv_heads - 1) * a.kv_head_stride +
                      (a.kv_len - 1) * a.kv_row_stride + a.head_dim;
  need(k, kv, "attention", "k");
  need(v, kv, "attention", "v");
  need(o, (a.batch - 1) * a.o_batch_stride + (a.q_len - 1) * a.o_row_stride + width, "attention", "o");
  if (key_padding_mask) need(*key_padding_mask, uint64_t(a.batch) * a.kv_len, "attention", "key_padding_mask");
  if (!fused_attention_fits(a.head_dim))
    throw Error("attention: no fused kernel fits head_dim " + std::to_string(a.head_dim) +
                " on this device (at most " + std::to_string(kMaxFusedHeadDim) + "); use attention_unfused");

  const auto& caps = ctx_.capabilities();
  struct {
    uint32_t q_len, kv_len;
    float scale;
    uint32_t causal_offset, flags;
    uint32_t q_batch_stride, q_row_stride, kv_batch_stride, kv_head_stride, kv_row_stride, o_batch_stride, o_row_stride;
    uint32_t base_q, base_k, base_v, base_o;
    uint32_t group;
  } push{a.q_len, a.kv_len, a.scale, a.causal_offset,
         (key_padding_mask ? 1u : 0u) | (a.causal ? 2u : 0u) | (step ? 4u : 0u),  // FLAG_* in the kernels
         u32(a.q_batch_stride), u32(a.q_row_stride), u32(a.kv_batch_stride), u32(a.kv_head_stride),
         u32(a.kv_row_stride), u32(a.o_batch_stride), u32(a.o_row_stride), 0, 0, 0, 0, a.heads / a.kv_heads};
  static_assert(sizeof push == 68, "matches Push in shaders/attention.comp, attention_tiled.comp, attention_direct.comp");
  const AttentionKernel which = attention_kernel(a);
  const std::string hd = std::to_string(a.head_dim);
  const Placed pq = place(q, "attention"), pk = place(k, "attention"), pv = place(v, "attention"),
               po = place(o, "attention"), pm = place(key_padding_mask ? *key_padding_mask : q, "attention");
  Kernel kern;
  uint32_t rows_per_group = 0;
  std::string label = std::string("attention ") + attention_kernel_name(which);
  switch (which) {
    case AttentionKernel::Direct: {
      // One query a workgroup for a decode step's single query (of four, three would be
      // computed for nothing). K and V as texels on CPU drivers where their rows lie on
      // whole texels (TEXEL_KV in the kernel; lavapipe, Mesa 25.0.7, 2-core Xeon, 8 heads
      // of 64: one query over 128 keys 217-248 us from storage buffers, 86 from texels;
      // 256 causal queries 5.3 ms, 3.7; 1024: 79 ms, 43).
      rows_per_group = a.q_len == 1 ? 1 : kDirectQueries;
      const uint32_t sg = caps.subgroup_size;
      auto on_texels = [&](const Placed& p) {
        return p.base % 4 == 0 && ops::view_reads_as_texels(caps, p.view, dtype_);
      };
      const bool texels = caps.type == DeviceType::Cpu && a.head_dim % (4 * sg) == 0 && a.kv_row_stride % 4 == 0 &&
                          a.kv_head_stride % 4 == 0 && a.kv_batch_stride % 4 == 0 && on_texels(pk) &&
                          on_texels(pv);
      Defines d = {{"HEAD_DIM", hd}, {"TQ", std::to_string(rows_per_group)}, {"SG", std::to_string(sg)}};
      if (texels) d.emplace_back("TEXEL_KV", "1"), label += " texels";
      const TexelFormat f = dtype_ == DType::F16 ? TexelFormat::Rgba32Ui : TexelFormat::Rgba32F;
      kern = kernel("attention_direct.comp", d, 6, sizeof push, {},
                    texels ? std::vector<TexelFormat>{TexelFormat::None, f, f} : std::vector<TexelFormat>{});
      break;
    }
    case AttentionKernel::Tiled:
      kern = kernel("attention_tiled.comp",
                    {{"HEAD_DIM", hd}, {"BQ", std::to_string(kTiledQueries)}, {"WG", std::to_string(kTiledInvocations)},
                     {"BKV", std::to_string(tiled_block_keys(caps, a.head_dim))}},
                    6, sizeof push);
      rows_per_group = kTiledQueries;
      break;
    case AttentionKernel::Rows:
      rows_per_group = rows_block_queries(caps);
      kern = kernel("attention.comp",
                    {{"HEAD_DIM", hd}, {"BQ", std::to_string(rows_per_group)},
                     {"BKV", std::to_string(rows_block_keys(caps, a.head_dim))}},
                    6, sizeof push);
      break;
  }
  if (pm.base) throw Error("attention: the key padding mask must start at a descriptor-aligned offset");
  push.base_q = pq.base;
  push.base_k = pk.base;
  push.base_v = pv.base;
  push.base_o = po.base;
  cl.dispatch(kern, {uint32_t(ops::ceil_div(a.q_len, rows_per_group)), a.heads, a.batch},
              {in(pq.view), in(pk.view), in(pv.view), out(po.view), in(pm.view), in(step ? step->state : pq.view)}, push,
              label);
}

void Ops::attention_unfused(CommandList& cl, const Attention& a0, const BufferView& q, const BufferView& k,
                            const BufferView& v, const BufferView& o, const BufferView& scores,
                            const std::optional<BufferView>& key_padding_mask) {
  const Attention a = resolve(a0);
  const uint64_t per_head = uint64_t(a.q_len) * a.kv_len;
  need(scores, per_head * a.heads * a.batch, "attention_unfused", "scores");
  // Grouped heads: one pass per query head r of each group, batched over the K/V heads
  // (query head g * group + r reads K/V head g); one pass when every head has its own.
  const uint32_t group = a.heads / a.kv_heads;
  const uint64_t e = dtype_bytes(dtype_);
  for (uint32_t r = 0; r < group; ++r) {
    // scores[b, h] = Q[b, :, h] K[b, h / group]^T * scale
    Gemm qk{.M = a.q_len, .N = a.kv_len, .K = a.head_dim, .trans_b = true, .alpha = a.scale,
            .lda = u32(a.q_row_stride), .ldb = u32(a.kv_row_stride), .batch = a.batch, .heads = a.kv_heads};
    qk.stride_a = {a.q_batch_stride, uint64_t(group) * a.head_dim};
    qk.stride_b = {a.kv_batch_stride, a.kv_head_stride};
    qk.stride_c = {per_head * a.heads, per_head * group};
    gemm(cl, qk, {.a = from(q, uint64_t(r) * a.head_dim * e), .b = k, .c = from(scores, uint64_t(r) * per_head * e)});
  }
  // softmax over keys, the padding mask broadcast over heads and queries.
  Softmax s{.rows = a.batch * a.heads * a.q_len, .cols = a.kv_len, .mask_rows = a.batch,
            .mask_row_div = a.heads * a.q_len, .causal = a.causal, .causal_rows = a.q_len,
            .causal_offset = a.causal_offset};
  softmax(cl, s, scores, scores, key_padding_mask);
  for (uint32_t r = 0; r < group; ++r) {
    // O[b, :, h] = P[b, h] V[b, h / group]
    Gemm pv{.M = a.q_len, .N = a.head_dim, .K = a.kv_len, .ldb = u32(a.kv_row_stride),
            .ldc = u32(a.o_row_stride), .batch = a.batch, .heads = a.kv_heads};
    pv.stride_a = {per_head * a.heads, per_head * group};
    pv.stride_b = {a.kv_batch_stride, a.kv_head_stride};
    pv.stride_c = {a.o_batch_stride, uint64_t(group) * a.head_dim};
    gemm(cl, pv, {.a = from(scores, uint64_t(r) * per_head * e), .b = v, .c = from(o, uint64_t(r) * a.head_dim * e)});
  }
}

}  // namespace vkf
