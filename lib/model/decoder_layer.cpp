// post-norm: x = LN(x + SelfAttn(x)); x = LN(x + CrossAttn(x, memory)); x = LN(x + FFN(x))
// pre-norm:  x = x + SelfAttn(LN(x)); x = x + CrossAttn(LN(x), memory); x = x + FFN(LN(x))
#include "decoder_layer.hpp"

namespace vkf::model {

void record_decoder_layer(const LayerRecorder& r, const DecoderLayer& l, size_t index, const DecoderPass& p,
                          const DecoderBuffers& b, const KvCache& cache) {
  const uint32_t D = r.d_model, d = D / p.heads;
  const Buffer &self_cache = cache.self(index), &cross_cache = cache.cross(index);

  // Masked self-attention: the new tokens' keys and values join the cache at rows
  // [t0, t0 + n) (a decode step: at the step's row), and each query sees the keys up
  // to its own position.
  auto self_attention = [&](const BufferView& in, const BufferView& out, const BufferView& residual) {
    // One projection: queries [rows, D] to scratch, keys and values [rows, 2D] into the
    // self cache [batch, capacity, 2D] (split output).
    Gemm qkv{.M = p.n, .N = 3 * D, .K = D, .trans_b = true, .batch = p.batch};
    qkv.stride_a = {uint64_t(p.n) * D, 0};
    qkv.stride_c = {uint64_t(p.n) * D, 0};
    qkv.split = {.column = D, .ld = uint32_t(cache.row_stride()), .stride = cache.self_batch_stride()};
    const uint64_t first_row = p.step ? 0 : p.t0;  // a step's rows start at its state's step
    r.ops.gemm(r.cl, qkv, in, l.self_qkv.weight.view(), b.queries.view(), l.self_qkv.bias.view(), std::nullopt, p.step,
               r.at(self_cache, first_row * cache.row_stride()));
    Attention a{.batch = p.batch, .heads = p.heads, .head_dim = d, .q_len = p.n,
                .kv_len = p.step ? cache.capacity() : p.t0 + p.n, .causal = true, .causal_offset = p.t0,
                .kv_batch_stride = cache.self_batch_stride(), .kv_row_stride = cache.row_stride()};
    r.ops.attention(r.cl, a, b.queries.view(), r.at(self_cache, 0), r.at(self_cache, D), b.attn.view(), std::nullopt,
                    p.step);                                                    // attn [rows, D]
    r.linear(l.self_out, b.attn.view(), out, Activation::None, residual);      // out [rows, D]
  };

  // Cross-attention: queries from the target, keys and values of the encoder's memory
  // (computed once per source by encode), padded source tokens masked.
  auto cross_attention = [&](const BufferView& in, const BufferView& out, const BufferView& residual) {
    r.linear(l.cross_q, in, b.queries.view());  // queries [rows, D]
    const Attention a{.batch = p.batch, .heads = p.heads, .head_dim = d, .q_len = p.n, .kv_len = cache.src_len(),
                      .kv_batch_stride = cache.cross_batch_stride(), .kv_row_stride = cache.row_stride()};
    r.ops.attention(r.cl, a, b.queries.view(), r.at(cross_cache, 0), r.at(cross_cache, D), b.attn.view(),
                    b.src_mask);                                           // attn [rows, D]
    r.linear(l.cross_out, b.attn.view(), out, Activation::None, residual);  // out [rows, D]
  };

  auto feed_forward = [&](const BufferView& in, const BufferView& out, const BufferView& residual) {
    r.feed_forward(l.ffn, in, b.hidden, out, residual);
  };

  r.residual_sublayer(l.norm1, b.x, b.y, self_attention);
  r.residual_sublayer(l.norm2, b.x, b.y, cross_attention);
  r.residual_sublayer(l.norm3, b.x, b.y, feed_forward);
}

}  // namespace vkf::model
