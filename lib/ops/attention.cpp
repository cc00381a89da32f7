// Multi-head attention: the fused online-softmax kernel, and the unfused GEMM +
// softmax + GEMM path it is tested and benchmarked against. Models need the fused
// kernel (a replayed decode step has no unfused form) and check that it fits at load.
#include <algorithm>
#include <cmath>

#include "grid.hpp"
#include "vkformer/ops.hpp"

namespace vkf {

namespace {

// Fills the packed [B, L, H*d] defaults and checks the buffers hold every element used.
Attention resolve(const Attention& a0) {
  Attention a = a0;
  if (a.batch == 0 || a.heads == 0 || a.head_dim == 0 || a.q_len == 0 || a.kv_len == 0)
    throw Error("attention: batch, heads, head_dim, q_len and kv_len must be at least 1");
  const uint64_t width = uint64_t(a.heads) * a.head_dim;
  if (!a.scale) a.scale = float(1.0 / std::sqrt(double(a.head_dim)));
  if (!a.q_row_stride) a.q_row_stride = width;
  if (!a.q_batch_stride) a.q_batch_stride = a.q_len * a.q_row_stride;
  if (!a.kv_row_stride) a.kv_row_stride = width;
  if (!a.kv_head_stride) a.kv_head_stride = a.head_dim;
  if (!a.kv_batch_stride) a.kv_batch_stride = a.kv_len * a.kv_row_stride;
  if (!a.o_row_stride) a.o_row_stride = width;
  if (!a.o_batch_stride) a.o_batch_stride = a.q_len * a.o_row_stride;
  return a;
}

uint32_t u32(uint64_t v) {
  if (v > 0xffffffffull) throw Error("attention: a stride does not fit 32 bits");
  return uint32_t(v);
}

}  // namespace

bool Ops::fused_attention_fits(uint32_t head_dim) const {
  const auto& c = ctx_.capabilities();
  return head_dim >= 1 && head_dim <= kMaxFusedHeadDim && 2 * head_dim * 4 <= c.max_shared_memory &&
         c.max_workgroup_invocations >= 32;
}

void Ops::attention(CommandList& cl, const Attention& a0, const BufferView& q, const BufferView& k,
                    const BufferView& v, const BufferView& o, const std::optional<BufferView>& key_padding_mask,
                    const std::optional<DecodeStep>& step) {
  const Attention a = resolve(a0);
  const uint64_t width = uint64_t(a.heads) * a.head_dim;
  if (step && key_padding_mask) throw Error("attention: a key padding mask cannot be used with a decode step");
  if (step && uint64_t(step->max_step) + a.q_len > a.kv_len)
    throw Error("attention: a decode step up to " + std::to_string(step->max_step) + " with " + std::to_string(a.q_len) +
                " queries needs kv_len of at least " + std::to_string(uint64_t(step->max_step) + a.q_len));
  need(q, (a.batch - 1) * a.q_batch_stride + (a.q_len - 1) * a.q_row_stride + width, "attention", "q");
  if (step) need_step(*step, "attention");
  const uint64_t kv = (a.batch - 1) * a.kv_batch_stride + (a.heads - 1) * a.kv_head_stride +
                      (a.kv_len - 1) * a.kv_row_stride + a.head_dim;
  need(k, kv, "attention", "k");
  need(v, kv, "attention", "v");
  need(o, (a.batch - 1) * a.o_batch_stride + (a.q_len - 1) * a.o_row_stride + width, "attention", "o");
  if (key_padding_mask) need(*key_padding_mask, uint64_t(a.batch) * a.kv_len, "attention", "key_padding_mask");
  if (!fused_attention_fits(a.head_dim))
    throw Error("attention: the fused kernel does not fit head_dim " + std::to_string(a.head_dim) +
                " on this device (at most " + std::to_string(kMaxFusedHeadDim) + "); use attention_unfused");

  const auto& caps = ctx_.capabilities();
  const uint32_t bq = std::min<uint32_t>(64, caps.max_workgroup_invocations);
  const uint32_t shared = std::min<uint32_t>(caps.max_shared_memory, 16384);
  const uint32_t bkv = std::clamp<uint32_t>(shared / (2 * 4 * a.head_dim), 1, 64);
  struct {
    uint32_t q_len, kv_len;
    float scale;
    uint32_t causal_offset, flags;
    uint32_t q_batch_stride, q_row_stride, kv_batch_stride, kv_head_stride, kv_row_stride, o_batch_stride, o_row_stride;
    uint32_t base_q, base_k, base_v, base_o;
  } push{a.q_len, a.kv_len, a.scale, a.causal_offset,
         (key_padding_mask ? 1u : 0u) | (a.causal ? 2u : 0u) | (step ? 4u : 0u),  // FLAG_* in attention.comp
         u32(a.q_batch_stride), u32(a.q_row_stride), u32(a.kv_batch_stride), u32(a.kv_head_stride),
         u32(a.kv_row_stride), u32(a.o_batch_stride), u32(a.o_row_stride), 0, 0, 0, 0};
  static_assert(sizeof push == 64, "matches Push in shaders/attention.comp and attention_direct.comp");
  // CPU drivers take the kernel without shared memory or barriers (attention_direct.comp:
  // lavapipe pays a coroutine switch per SIMD chunk at each barrier), where a fixed
  // subgroup size and subgroup shuffles and arithmetic let it run; GPUs the tiled one.
  const bool direct = caps.type == DeviceType::Cpu && caps.subgroup_basic && caps.subgroup_shuffle &&
                      caps.subgroup_arithmetic && caps.min_subgroup_size == caps.max_subgroup_size &&
                      caps.subgroup_size >= 4 && caps.subgroup_size <= 64;
  constexpr uint32_t kDirectQueries = 4;  // per workgroup (TQ)
  Kernel kern = direct ? kernel("attention_direct.comp",
                                {{"HEAD_DIM", std::to_string(a.head_dim)}, {"TQ", std::to_string(kDirectQueries)},
                                 {"SG", std::to_string(caps.subgroup_size)}},
                                6, sizeof push)
                       : kernel("attention.comp",
                                {{"HEAD_DIM", std::to_string(a.head_dim)}, {"BQ", std::to_string(bq)},
                                 {"BKV", std::to_string(bkv)}},
                                6, sizeof push);
  const uint32_t rows_per_group = direct ? kDirectQueries : bq;
  const Placed pq = place(q, "attention"), pk = place(k, "attention"), pv = place(v, "attention"),
               po = place(o, "attention"), pm = place(key_padding_mask ? *key_padding_mask : q, "attention");
  if (pm.base) throw Error("attention: the key padding mask must start at a descriptor-aligned offset");
  push.base_q = pq.base;
  push.base_k = pk.base;
  push.base_v = pv.base;
  push.base_o = po.base;
  cl.dispatch(kern, {uint32_t(ops::ceil_div(a.q_len, rows_per_group)), a.heads, a.batch},
              {in(pq.view), in(pk.view), in(pv.view), out(po.view), in(pm.view), in(step ? step->state : pq.view)}, push,
              "attention");
}

void Ops::attention_unfused(CommandList& cl, const Attention& a0, const BufferView& q, const BufferView& k,
                            const BufferView& v, const BufferView& o, const BufferView& scores,
                            const std::optional<BufferView>& key_padding_mask) {
  const Attention a = resolve(a0);
  const uint64_t per_head = uint64_t(a.q_len) * a.kv_len;
  need(scores, per_head * a.heads * a.batch, "attention_unfused", "scores");
  // scores[b, h] = Q[b, :, h] K[b, h]^T * scale
  Gemm qk{.M = a.q_len, .N = a.kv_len, .K = a.head_dim, .trans_b = true, .alpha = a.scale,
          .lda = u32(a.q_row_stride), .ldb = u32(a.kv_row_stride), .batch = a.batch, .heads = a.heads};
  qk.stride_a = {a.q_batch_stride, a.head_dim};
  qk.stride_b = {a.kv_batch_stride, a.kv_head_stride};
  qk.stride_c = {per_head * a.heads, per_head};
  gemm(cl, qk, q, k, scores);
  // softmax over keys, the padding mask broadcast over heads and queries.
  Softmax s{.rows = a.batch * a.heads * a.q_len, .cols = a.kv_len, .mask_rows = a.batch,
            .mask_row_div = a.heads * a.q_len, .causal = a.causal, .causal_rows = a.q_len,
            .causal_offset = a.causal_offset};
  softmax(cl, s, scores, scores, key_padding_mask);
  // O[b, :, h] = P[b, h] V[b, h]
  Gemm pv{.M = a.q_len, .N = a.head_dim, .K = a.kv_len, .ldb = u32(a.kv_row_stride),
          .ldc = u32(a.o_row_stride), .batch = a.batch, .heads = a.heads};
  pv.stride_a = qk.stride_c;
  pv.stride_b = qk.stride_b;
  pv.stride_c = {a.o_batch_stride, a.head_dim};
  gemm(cl, pv, scores, v, o);
}

}  // namespace vkf
