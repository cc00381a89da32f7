// post-norm: x = LN(x + SelfAttn(x)); x = LN(x + CrossAttn(x, memory)); x = LN(x + FFN(x))
// pre-norm:  x = x + SelfAttn(LN(x)); x = x + CrossAttn(LN(x), memory); x = x + FFN(LN(x))
#include "decoder_layer.hpp"

namespace vkf::model {

namespace {

// Masked self-attention's projection: the new tokens' queries [rows, W] to scratch, and
// their keys and values joining the self cache [batch, capacity, 2 kv_width] at rows
// [t0, t0 + n) (a decode step: at the step's row), in one GEMM with a split output (and
// one more for the values where a mix stores their rows apart: Linear::apart).
void project_qkv(const LayerRecorder& r, const DecoderLayer& l, size_t index, const DecoderPass& p,
                 const DecoderBuffers& b, const KvCache& cache, const SublayerIn& input) {
  const BufferView& in = input.view;
  const Folded in_norm = input.norm;
  const std::optional<RowStats>& in_stats = input.stats;
  const uint32_t D = r.d_model, apart = l.self_qkv.apart.rows;  // v's rows where a mix stores them apart
  const uint32_t W = p.heads * p.head_dim;                        // the queries' width
  Gemm qkv{.M = p.n, .N = W + 2 * cache.kv_width() - apart, .K = D, .trans_b = true, .batch = p.batch,
           .norm_eps = r.eps, .norm_kind = r.norm_kind};
  qkv.stride_a = {uint64_t(p.n) * D, 0};
  qkv.stride_c = {uint64_t(p.n) * W, 0};
  qkv.split = {.column = W, .ld = uint32_t(cache.row_stride()), .stride = cache.self_batch_stride()};
  qkv.b_blocks = l.self_qkv.blocks;
  if (in_norm.norm) qkv.norm_of = NormOf::A;
  const uint64_t first_row = p.step ? 0 : p.t0;  // a step's rows start at its state's step
  if (apart) {
    // The values [rows, apart] in their own blocks: a product of their own, straight to
    // the value columns of the new tokens' cache rows.
    Gemm v = qkv;
    v.N = apart, v.split = {}, v.b_blocks = l.self_qkv.apart.blocks;
    v.ldc = uint32_t(cache.row_stride()), v.stride_c = {cache.self_batch_stride(), 0};
    const uint64_t column = 2 * cache.kv_width() - apart;
    r.ops.gemm(r.cl, v,
               {.a = in, .b = l.self_qkv.apart.weight.view(),
                .c = r.at(cache.self(index), first_row * cache.row_stride() + column),
                .bias = r.at(l.self_qkv.bias, W + column), .step = p.step, .norm = in_norm.weights(),
                .stats = {.in = in_norm.norm ? in_stats : std::nullopt}, .scratch = r.dequantized});
  }
  // A batch's decode step as one product of a row per sequence, each row's keys and
  // values to its own cache (rows_are_items): the weight read once, not once a sequence.
  // Not with a folded norm (at most 4 rows) nor where the blocks' kernel takes fewer rows.
  Gemm items = qkv;
  items.M = p.batch, items.batch = 1, items.stride_a = items.stride_c = {};
  items.split.rows_are_items = true;
  if (p.n == 1 && p.batch > 1 && !in_norm.norm && (!qkv.b_blocks || r.ops.gemm_reads_blocks(items))) qkv = items;
  r.ops.gemm(r.cl, qkv,
             {.a = in, .b = l.self_qkv.weight.view(), .c = b.queries.view(), .bias = l.self_qkv.bias.view(),
              .step = p.step, .split_out = r.at(cache.self(index), first_row * cache.row_stride()),
              .norm = in_norm.weights(), .stats = {.in = in_norm.norm ? in_stats : std::nullopt},
              .scratch = r.dequantized});
  if (!b.rope_table) return;
  // Rotary positions: the new queries [rows, W] and keys (their cache rows) rotated in
  // place, in one dispatch.
  const uint32_t d = p.head_dim, kv_heads = cache.kv_width() / d;
  const Rope q{.batch = p.batch, .rows = p.n, .heads = p.heads, .head_dim = d, .position_offset = p.t0,
               .positions = b.rope_positions};
  const Rope k{.batch = p.batch, .rows = p.n, .heads = kv_heads, .head_dim = d, .batch_stride = cache.self_batch_stride(),
               .row_stride = cache.row_stride(), .position_offset = p.t0, .positions = b.rope_positions,
               .rows_from_step = bool(p.step)};
  r.ops.rope(r.cl, q, b.queries.view(), *b.rope_table, p.step, b.position_shift,
             Ops::RopeTarget{k, r.at(cache.self(index), first_row * cache.row_stride())});
}

// An attention sublayer after its queries' projection: self-attention (queries over the
// self cache, each up to its own position; a left-padded batch's padding masked) or
// cross-attention (over the encoder's memory, computed once per source by encode;
// padded source tokens masked), then its output projection with the residual:
// queries [rows, W], attn [rows, W], out [rows, D] (SublayerOut). A decode step's, as
// the plan says: as any pass's; or
// decode_attention (flash-decoding, the heads combined by the last to finish) then the
// projection; or both in one dispatch, the residual normalised as it is read (post-norm).
std::optional<RowStats> attend(const LayerRecorder& r, const DecoderPass& p, const DecoderBuffers& b,
                               const KvCache& cache, size_t index, bool self, const Linear& out_proj,
                               const SublayerOut& out) {
  // Grouped K/V heads: self-attention's are fewer (kv_width); cross-attention's as many as the queries'.
  const uint32_t D = r.d_model, d = p.head_dim, W = p.heads * d, kv_width = self ? cache.kv_width() : W;
  const Buffer& kv = self ? cache.self(index) : cache.cross(index);
  Attention a{.batch = p.batch, .heads = p.heads, .head_dim = d, .kv_heads = self ? kv_width / d : 0, .q_len = p.n,
              .kv_len = self ? (p.step ? cache.capacity() : p.t0 + p.n) : cache.src_len(), .causal = self,
              .causal_offset = self ? p.t0 : 0,
              .kv_batch_stride = self ? cache.self_batch_stride() : cache.cross_batch_stride(),
              .kv_row_stride = cache.row_stride()};
  const auto mask = self ? b.self_mask : std::optional(b.src_mask);
  const auto step = self ? p.step : std::nullopt;
  using StepAttention = LayerPlan::StepAttention;
  if (!p.step || r.plan.step_attention == StepAttention::Generic) {
    r.ops.attention(r.cl, a, b.queries.view(), r.at(kv, 0), r.at(kv, kv_width), b.attn.view(), mask, step);  // attn [rows, W]
    return r.project_out(out_proj, b.attn.view(), out);                                                       // out [rows, D]
  }
  if (out.then || out.stats_out) throw Error("a decode step's attention writes no norm and no row statistics");
  a.kv_heads = kv_width / d, a.q_len = 1, a.causal = false, a.causal_offset = 0;  // the step's keys: its mask and key count
  if (r.plan.step_attention == StepAttention::Decode) {
    r.ops.decode_attention(r.cl, a, b.queries.view(), r.at(kv, 0), r.at(kv, kv_width), b.attn.view(),
                           b.attention_scratch, mask, step);  // attn [batch, W]
    return r.project_out(out_proj, b.attn.view(), out);      // out [batch, D]
  }
  const AttentionProjection proj{.weight = out_proj.weight.view(), .bias = out_proj.bias.view(), .residual = out.residual,
                                 .residual_norm = out.residual_norm.weights(), .norm_kind = r.norm_kind, .N = D,
                                 .norm_eps = r.eps};
  r.ops.decode_attention(r.cl, a, b.queries.view(), r.at(kv, 0), r.at(kv, kv_width), out.out, b.attention_scratch,
                         mask, step, proj);  // out [batch, D]
  return std::nullopt;
}

}  // namespace

Stream record_decoder_layer(const LayerRecorder& r, const DecoderLayer& l, size_t index, const DecoderPass& p,
                            const DecoderBuffers& b, const KvCache& cache, Stream x) {
  auto self_attention = [&](const SublayerIn& in, const SublayerOut& out) {
    project_qkv(r, l, index, p, b, cache, in);  // queries [rows, W]; keys and values to the self cache
    return attend(r, p, b, cache, index, true, l.self_out, out);  // out [rows, D]
  };
  auto cross_attention = [&](const SublayerIn& in, const SublayerOut& out) {
    r.project(l.cross_q, in, b.queries.view());  // queries [rows, W]
    return attend(r, p, b, cache, index, false, l.cross_out, out);  // out [rows, D]
  };
  auto feed_forward = [&](const SublayerIn& in, const SublayerOut& out) {
    return r.feed_forward(l.ffn, in, b.hidden, out);  // out [rows, D]
  };
  x = r.sublayer(x, l.norm1, b.x, b.y, self_attention);
  if (l.has_cross_attention()) x = r.sublayer(x, l.norm2, b.x, b.y, cross_attention);
  return r.sublayer(x, l.norm3, b.x, b.y, feed_forward);
}

}  // namespace vkf::model
