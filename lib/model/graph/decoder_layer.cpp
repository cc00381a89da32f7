// post-norm: x = LN(x + SelfAttn(x)); x = LN(x + CrossAttn(x, memory)); x = LN(x + FFN(x))
// pre-norm:  x = x + SelfAttn(LN(x)); x = x + CrossAttn(LN(x), memory); x = x + FFN(LN(x))
#include "decoder_layer.hpp"

namespace vkf::model {

namespace {

// Masked self-attention's projection: the new tokens' queries [rows, D] to scratch, and
// their keys and values joining the self cache [batch, capacity, 2D] at rows
// [t0, t0 + n) (a decode step: at the step's row), in one GEMM with a split output (and
// one more for the values where a mix stores their rows apart: Linear::apart).
void project_qkv(const LayerRecorder& r, const DecoderLayer& l, size_t index, const DecoderPass& p,
                 const DecoderBuffers& b, const KvCache& cache, const BufferView& in, Folded in_norm,
                 const std::optional<RowStats>& in_stats = std::nullopt) {
  const uint32_t D = r.d_model, apart = l.self_qkv.apart.rows;  // v's rows where a mix stores them apart
  Gemm qkv{.M = p.n, .N = D + 2 * cache.kv_width() - apart, .K = D, .trans_b = true, .batch = p.batch,
           .norm_eps = r.eps, .norm_rms = r.rms_norm};
  qkv.stride_a = {uint64_t(p.n) * D, 0};
  qkv.stride_c = {uint64_t(p.n) * D, 0};
  qkv.split = {.column = D, .ld = uint32_t(cache.row_stride()), .stride = cache.self_batch_stride()};
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
                .bias = r.at(l.self_qkv.bias, D + column), .step = p.step, .norm = in_norm.weights(),
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
  // Rotary positions: the new queries [rows, D] and keys (their cache rows) rotated in
  // place, in one dispatch.
  const uint32_t d = D / p.heads, kv_heads = cache.kv_width() / d;
  const Rope q{.batch = p.batch, .rows = p.n, .heads = p.heads, .head_dim = d, .position_offset = p.t0,
               .positions = b.rope_positions};
  const Rope k{.batch = p.batch, .rows = p.n, .heads = kv_heads, .head_dim = d, .batch_stride = cache.self_batch_stride(),
               .row_stride = cache.row_stride(), .position_offset = p.t0, .positions = b.rope_positions,
               .rows_from_step = bool(p.step)};
  r.ops.rope(r.cl, q, b.queries.view(), *b.rope_table, p.step, b.position_shift,
             Ops::RopeTarget{k, r.at(cache.self(index), first_row * cache.row_stride())});
}

// A pre-norm FFN's first half with its norm folded: hidden = act(LN3(x) W1^T + b1)
// [rows, F], or, gated (Llama's SwiGLU), silu(gate) * up [rows, F] in the same product's
// epilogue; where the weight is too large for that (LayerRecorder::gates_in_epilogue),
// [gate | up] [rows, 2F] then silu(gate) * up [rows, F] after it in the same buffer (one
// dispatch more). Returns hidden.
BufferView folded_up_projection(const LayerRecorder& r, const DecoderLayer& l, const BufferView& x,
                                const DecoderBuffers& b, const GemmRowStats& stats = {}) {
  if (!r.gated_ffn || r.gates_in_epilogue(l.ffn.linear1)) {
    r.folded_linear(l.ffn.linear1, x, b.hidden.view(), r.activation, {}, {&l.norm3}, {}, stats, r.gated_ffn);
    return b.hidden.view();
  }
  const uint32_t F = l.ffn.linear2.in;
  r.folded_linear(l.ffn.linear1, x, b.hidden.view(), Activation::None, {}, {&l.norm3}, {}, stats);  // [gate | up]
  const BufferView product = r.at(b.hidden, uint64_t(r.rows) * 2 * F);
  r.ops.swiglu(r.cl, b.hidden.view(), product, r.rows, F);  // silu(gate) * up [rows, F]
  return product;
}

// Masked self-attention's first half: the projections, then each query attends over the
// keys up to its own position. attn [rows, D].
void self_attend(const LayerRecorder& r, const DecoderLayer& l, size_t index, const DecoderPass& p,
                 const DecoderBuffers& b, const KvCache& cache, const BufferView& in) {
  const uint32_t D = r.d_model, d = D / p.heads;
  project_qkv(r, l, index, p, b, cache, in, {});
  const Buffer& self_cache = cache.self(index);
  Attention a{.batch = p.batch, .heads = p.heads, .head_dim = d, .kv_heads = cache.kv_width() / d, .q_len = p.n,
              .kv_len = p.step ? cache.capacity() : p.t0 + p.n, .causal = true, .causal_offset = p.t0,
              .kv_batch_stride = cache.self_batch_stride(), .kv_row_stride = cache.row_stride()};
  r.ops.attention(r.cl, a, b.queries.view(), r.at(self_cache, 0), r.at(self_cache, cache.kv_width()), b.attn.view(),
                  b.self_mask, p.step);  // attn [rows, D]
}

// A decode step's attention and output projection in one dispatch (flash-decoding, the
// heads combined by the last to finish): out = Attn(queries) W_o^T + b + LN?(residual),
// the residual normalised by `residual_norm` as it is read (post-norm). Self-attention
// reads the self cache up to the step's key count; cross-attention the encoder's
// memory, padded source tokens masked. out [batch, D]. Where the projection is not
// fused (Ops::project_in_decode_attention), the same in two: attn [batch, D], then the
// decode-step GEMM with the same epilogue.
void attend_and_project(const LayerRecorder& r, const DecoderPass& p, const DecoderBuffers& b, const KvCache& cache,
                        size_t index, bool self, const Linear& out_proj, const BufferView& out,
                        const BufferView& residual, Folded residual_norm) {
  const uint32_t D = r.d_model, kv_width = self ? cache.kv_width() : D;  // grouped K/V heads: self-attention's
  const Buffer& kv = self ? cache.self(index) : cache.cross(index);
  const Attention a{.batch = p.batch, .heads = p.heads, .head_dim = D / p.heads,
                    .kv_heads = kv_width / (D / p.heads), .q_len = 1,
                    .kv_len = self ? cache.capacity() : cache.src_len(),
                    .kv_batch_stride = self ? cache.self_batch_stride() : cache.cross_batch_stride(),
                    .kv_row_stride = cache.row_stride()};
  const auto mask = self ? b.self_mask : std::optional(b.src_mask);
  const auto step = self ? p.step : std::nullopt;
  if (!r.ops.project_in_decode_attention()) {
    r.ops.decode_attention(r.cl, a, b.queries.view(), r.at(kv, 0), r.at(kv, kv_width), b.attn.view(),
                           b.attention_scratch, mask, step);                                // attn [batch, D]
    r.folded_linear(out_proj, b.attn.view(), out, Activation::None, residual, {}, residual_norm);  // out [batch, D]
    return;
  }
  const AttentionProjection proj{.weight = out_proj.weight.view(), .bias = out_proj.bias.view(), .residual = residual,
                                 .residual_norm = residual_norm.weights(), .N = D, .norm_eps = r.eps};
  r.ops.decode_attention(r.cl, a, b.queries.view(), r.at(kv, 0), r.at(kv, kv_width), out, b.attention_scratch, mask,
                         step, proj);
}

// Cross-attention's middle: queries (already projected) over the keys and values of
// the encoder's memory (computed once per source by encode), padded source tokens
// masked. attn [rows, D].
void cross_attend(const LayerRecorder& r, size_t index, const DecoderPass& p, const DecoderBuffers& b,
                  const KvCache& cache) {
  const uint32_t D = r.d_model, d = D / p.heads;
  const Buffer& cross_cache = cache.cross(index);
  const Attention a{.batch = p.batch, .heads = p.heads, .head_dim = d, .q_len = p.n, .kv_len = cache.src_len(),
                    .kv_batch_stride = cache.cross_batch_stride(), .kv_row_stride = cache.row_stride()};
  r.ops.attention(r.cl, a, b.queries.view(), r.at(cross_cache, 0), r.at(cross_cache, D), b.attn.view(), b.src_mask);
}

}  // namespace

void record_decoder_layer(const LayerRecorder& r, const DecoderLayer& l, size_t index, const DecoderPass& p,
                          const DecoderBuffers& b, const KvCache& cache) {
  auto self_attention = [&](const BufferView& in, const BufferView& out, const BufferView& residual, const ThenNorm* then) {
    self_attend(r, l, index, p, b, cache, in);
    r.linear(l.self_out, b.attn.view(), out, Activation::None, residual, then);  // out [rows, D]
  };
  auto cross_attention = [&](const BufferView& in, const BufferView& out, const BufferView& residual, const ThenNorm* then) {
    r.linear(l.cross_q, in, b.queries.view());  // queries [rows, D]
    cross_attend(r, index, p, b, cache);
    r.linear(l.cross_out, b.attn.view(), out, Activation::None, residual, then);  // out [rows, D]
  };
  auto feed_forward = [&](const BufferView& in, const BufferView& out, const BufferView& residual, const ThenNorm* then) {
    r.feed_forward(l.ffn, in, b.hidden, out, residual, then);
  };
  r.residual_sublayer(l.norm1, b.x, b.y, self_attention);
  if (l.has_cross_attention()) r.residual_sublayer(l.norm2, b.x, b.y, cross_attention);
  r.residual_sublayer(l.norm3, b.x, b.y, feed_forward);
}

// A decoder-only prompt pass (pre-norm, no cross-attention) as the fused encoder runs:
// 5 dispatches, each LayerNorm folded into the GEMM that reads it, the residual GEMMs
// handing their rows' statistics on (RowStats) where the device's GEMMs do. x stays in
// place; returns the statistics of x's rows the layer's last GEMM wrote.
std::optional<RowStats> record_decoder_layer_prompt(const LayerRecorder& r, const DecoderLayer& l, size_t index,
                                                    const DecoderPass& p, const DecoderBuffers& b,
                                                    const KvCache& cache, const std::optional<RowStats>& x_stats,
                                                    const Buffer* const stats[2]) {
  if (!r.norm_first || l.has_cross_attention() || p.step)
    throw Error("a fused prompt pass takes a pre-norm decoder layer without cross-attention");
  const uint32_t D = r.d_model, d = D / p.heads;
  auto stats_out = [&](const std::optional<RowStats>& reading) -> std::optional<BufferView> {
    if (!stats[0] || !*stats[0]) return std::nullopt;
    return (reading && reading->view.alloc == stats[0]->view().alloc ? *stats[1] : *stats[0]).view();
  };
  const BufferView x = b.x.view();                                    // [rows, D]
  project_qkv(r, l, index, p, b, cache, x, {&l.norm1}, x_stats);      // queries [rows, D], K/V to the cache, of LN1(x)
  const Buffer& self_cache = cache.self(index);
  const uint32_t kv_width = cache.kv_width();                         // grouped K/V heads: narrower than D
  const Attention a{.batch = p.batch, .heads = p.heads, .head_dim = d, .kv_heads = kv_width / d, .q_len = p.n,
                    .kv_len = p.t0 + p.n, .causal = true, .causal_offset = p.t0,
                    .kv_batch_stride = cache.self_batch_stride(), .kv_row_stride = cache.row_stride()};
  r.ops.attention(r.cl, a, b.queries.view(), r.at(self_cache, 0), r.at(self_cache, kv_width), b.attn.view(),
                  b.self_mask);                                       // attn [rows, D]
  const auto sx = r.folded_linear(l.self_out, b.attn.view(), x, Activation::None, x, {}, {},
                                  {.out = stats_out(x_stats)});       // x += SelfAttn W_o^T + b
  const BufferView hidden = folded_up_projection(r, l, x, b, {sx});   // hidden [rows, F] of LN3(x)
  return r.folded_linear(l.ffn.linear2, hidden, x, Activation::None, x, {}, {},
                         {.out = stats_out(sx)});                     // x += FFN
}

// The same layer for a decode step in 8 dispatches instead of 11: every LayerNorm folded
// into the GEMM that reads its output, each attention's output projection and residual
// in the decode-step GEMM after it (6 with them fused into decode_attention:
// VKF_DECODE_PROJECTION=attention, attend_and_project).
//   pre-norm:  every norm is the A side of the next projection (QKV, cross Q, FFN up);
//              the residual stream stays in place in s.x.
//   post-norm: the layer's output LN(h) is never written: h is, and LN comes along as
//              s.pending, folded into the next projection (A side) and into the
//              residual of the sublayer after it. h goes back and forth between b.x
//              and b.y (a norm of the residual reads the whole row while the sublayer
//              writes it, so it cannot be in place).
StepStream record_decoder_layer_step(const LayerRecorder& r, const DecoderLayer& l, size_t index,
                                     const DecoderPass& p, const DecoderBuffers& b, const KvCache& cache,
                                     StepStream s) {
  const Buffer& other = s.x == &b.x ? b.y : b.x;
  auto self_attention = [&](const BufferView& out, const BufferView& residual, Folded residual_norm) {
    attend_and_project(r, p, b, cache, index, true, l.self_out, out, residual, residual_norm);
  };
  auto cross_attention = [&](const BufferView& out, const BufferView& residual, Folded residual_norm) {
    attend_and_project(r, p, b, cache, index, false, l.cross_out, out, residual, residual_norm);
  };
  if (r.norm_first) {
    const BufferView x = s.x->view();                                                        // [rows, D]
    project_qkv(r, l, index, p, b, cache, x, {&l.norm1});                                   // of LN1(x)
    self_attention(x, x, {});                                                               // x += SelfAttn W_o^T + b
    if (l.has_cross_attention()) {
      r.folded_linear(l.cross_q, x, b.queries.view(), Activation::None, {}, {&l.norm2}, {});  // queries of LN2(x)
      cross_attention(x, x, {});                                                              // x += CrossAttn W_o^T + b
    }
    const BufferView hidden = folded_up_projection(r, l, x, b);                          // hidden [rows, F] of LN3(x)
    r.folded_linear(l.ffn.linear2, hidden, x, Activation::None, x, {}, {});              // x += FFN
    return {s.x, nullptr};
  }
  if (!l.has_cross_attention()) throw Error("a post-norm decoder layer without cross-attention is not supported");
  const BufferView h0 = s.x->view(), h1 = other.view(), h2 = s.x->view();  // x = LN_pending(h0)
  project_qkv(r, l, index, p, b, cache, h0, {s.pending});
  self_attention(h1, h0, {s.pending});                                                     // h1 = SelfAttn W^T + b + x
  r.folded_linear(l.cross_q, h1, b.queries.view(), Activation::None, {}, {&l.norm1}, {});  // queries of LN1(h1)
  cross_attention(h2, h1, {&l.norm1});                                                     // h2 = ... + LN1(h1)
  r.folded_linear(l.ffn.linear1, h2, b.hidden.view(), r.activation, {}, {&l.norm2}, {});  // hidden of LN2(h2)
  r.folded_linear(l.ffn.linear2, b.hidden.view(), h1, Activation::None, h2, {}, {&l.norm2});  // h3 = ... + LN2(h2)
  return {&other, &l.norm3};  // the layer's output is LN3(h3)
}

}  // namespace vkf::model
