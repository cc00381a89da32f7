// Multi-head attention: the fused online-softmax kernel, and the unfused GEMM +
// softmax + GEMM path it is tested and benchmarked against. Models need the fused
// kernel (a replayed decode step has no unfused form) and check that it fits at load.
#include <algorithm>
#include <cmath>

#include "attention_bias.hpp"
#include "attention_plan.hpp"
#include "gemm_tiles.hpp"
#include "grid.hpp"
#include "vkformer/gemm_tuning.hpp"
#include "vkformer/ops.hpp"

namespace vkf {

namespace {

// The view from `bytes` on (the operands of one query head of each group).
BufferView from(const BufferView& v, uint64_t bytes) {
  if (bytes > v.size) throw Error("attention: a view is too small for its heads");
  return {v.alloc, v.offset + bytes, v.size - bytes};
}

uint32_t u32(uint64_t v) {
  if (v > 0xffffffffull) throw Error("attention: a stride does not fit 32 bits");
  return uint32_t(v);
}

}  // namespace

AttentionKernel Ops::attention_kernel(const Attention& a) const {
  const auto tuning = ops::cached_gemm_tuning(ctx_, dtype_);
  return ops::planned_attention_kernel(ctx_.capabilities(), tuning ? &*tuning : nullptr, a, dtype_);
}

AttentionKernel Ops::default_attention_kernel(const Attention& a) const {
  return ops::default_attention_kernel(ctx_.capabilities(), a, dtype_);
}

bool Ops::fused_attention_fits(uint32_t head_dim) const {
  for (AttentionKernel k : kAttentionKernels)
    if (attention_kernel_problem(ctx_.capabilities(), k, head_dim, dtype_).empty()) return true;
  return false;
}

void Ops::attention(CommandList& cl, const Attention& a0, const BufferView& q, const BufferView& k,
                    const BufferView& v, const BufferView& o, const std::optional<BufferView>& key_padding_mask,
                    const std::optional<DecodeStep>& step, const std::optional<AttentionBias>& bias) {
  const Attention a = ops::resolved_attention(a0);
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
  // The queries' positions: causal_offset + i, or a step's key count - q_len + i.
  if (bias)
    ops::check_attention_bias(*bias, a.heads, (step ? uint64_t(step->max_step) : a.causal_offset) + a.q_len - 1,
                              a.kv_len, "attention");
  if (!fused_attention_fits(a.head_dim))
    throw Error("attention: no fused kernel fits head_dim " + std::to_string(a.head_dim) +
                " on this device (at most " + std::to_string(kMaxFusedHeadDim) + "); use attention_unfused");

  const char* op = "attention";
  const Placed pq = place(q, op), pk = place(k, op), pv = place(v, op), po = place(o, op),
               pm = place(key_padding_mask ? *key_padding_mask : q, op);
  if (pm.base) throw Error("attention: the key padding mask must start at a descriptor-aligned offset");
  const Placed pb = place(bias ? bias->table : q, "attention");
  if (pb.base) throw Error("attention: the position bias table must start at a descriptor-aligned offset");
  auto operand = [](const Placed& p) { return ops::GemmOperand{.start = p.view.offset, .base = p.base, .bytes = p.view.size}; };
  const auto tuning = ops::cached_gemm_tuning(ctx_, dtype_);
  const ops::AttentionPlan plan = ops::attention_plan(
      ctx_.capabilities(), tuning ? &*tuning : nullptr,
      {.a = a, .dtype = dtype_, .q = operand(pq), .k = operand(pk), .v = operand(pv), .o = operand(po),
       .mask = key_padding_mask.has_value(), .step = step.has_value(), .bias = bias});
  const Kernel kern = kernel(plan.shader.c_str(), plan.defines, 7, sizeof plan.push, {}, plan.texels);
  cl.dispatch(kern, plan.groups,
              {in(pq.view), in(pk.view), in(pv.view), out(po.view), in(pm.view), in(step ? step->state : pq.view),
               in(pb.view)},
              plan.push, plan.label);
}

void Ops::attention_unfused(CommandList& cl, const Attention& a0, const BufferView& q, const BufferView& k,
                            const BufferView& v, const BufferView& o, const BufferView& scores,
                            const std::optional<BufferView>& key_padding_mask) {
  const Attention a = ops::resolved_attention(a0);
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
