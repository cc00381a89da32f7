// post-norm: x = LN(x + SelfAttn(x)); x = LN(x + FFN(x))
// pre-norm:  x = x + SelfAttn(LN(x)); x = x + FFN(LN(x))
#include "encoder_layer.hpp"

namespace vkf::model {

void record_encoder_layer(const LayerRecorder& r, const EncoderLayer& l, const EncoderShape& s,
                          const EncoderBuffers& b, const std::optional<BufferView>& key_mask) {
  const uint32_t D = r.d_model;
  auto self_attention = [&](const BufferView& in, const BufferView& out, const BufferView& residual, const ThenNorm* then) {
    r.linear(l.self_qkv, in, b.qkv.view());  // qkv [rows, 3D]: q | k | v
    const Attention a{.batch = s.batch, .heads = s.heads, .head_dim = D / s.heads, .q_len = s.seq_len,
                      .kv_len = s.seq_len, .q_row_stride = 3 * D, .kv_batch_stride = uint64_t(s.seq_len) * 3 * D,
                      .kv_row_stride = 3 * D};
    r.ops.attention(r.cl, a, r.at(b.qkv, 0), r.at(b.qkv, D), r.at(b.qkv, 2 * D), b.attn.view(), key_mask);
    r.linear(l.self_out, b.attn.view(), out, Activation::None, residual, then);  // out [rows, D]
  };
  auto feed_forward = [&](const BufferView& in, const BufferView& out, const BufferView& residual, const ThenNorm* then) {
    r.feed_forward(l.ffn, in, b.hidden, out, residual, then);
  };
  r.residual_sublayer(l.norm1, b.x, b.y, self_attention);
  r.residual_sublayer(l.norm2, b.x, b.y, feed_forward);
}

uint32_t encoder_row_stats_parts(const Ops& ops, uint32_t rows, uint32_t D, uint32_t F) {
  // The two GEMMs that write them: the attention output projection and FFN down.
  return std::max(ops.gemm_row_stats_parts({.M = rows, .N = D, .K = D, .trans_b = true}),
                  ops.gemm_row_stats_parts({.M = rows, .N = D, .K = F, .trans_b = true}));
}

EncoderStream record_encoder_layer_fused(const LayerRecorder& r, const EncoderLayer& l, const EncoderShape& s,
                                         const EncoderBuffers& b, const std::optional<BufferView>& key_mask,
                                         EncoderStream in) {
  const uint32_t D = r.d_model;
  const Attention a{.batch = s.batch, .heads = s.heads, .head_dim = D / s.heads, .q_len = s.seq_len,
                    .kv_len = s.seq_len, .q_row_stride = 3 * D, .kv_batch_stride = uint64_t(s.seq_len) * 3 * D,
                    .kv_row_stride = 3 * D};
  auto attend = [&] {  // attn [rows, D] from qkv [rows, 3D]: q | k | v
    r.ops.attention(r.cl, a, r.at(b.qkv, 0), r.at(b.qkv, D), r.at(b.qkv, 2 * D), b.attn.view(), key_mask);
  };
  // Row statistics: the residual GEMMs write their output rows' into one of the two
  // stats buffers (the other holds those being read); the folded norms read them.
  const bool stats = bool(b.stats[0]);
  auto stats_out = [&](const std::optional<RowStats>& reading) -> std::optional<BufferView> {
    if (!stats) return std::nullopt;
    return (reading && reading->view.alloc == b.stats[0].view().alloc ? b.stats[1] : b.stats[0]).view();
  };
  if (r.norm_first) {
    if (in.pending) throw Error("encoder: a pre-norm layer takes no pending LayerNorm");
    const BufferView x = in.x->view();                                                                 // [rows, D]
    r.folded_linear(l.self_qkv, x, b.qkv.view(), Activation::None, {}, {&l.norm1}, {}, {in.stats});     // qkv of LN1(x)
    attend();
    const auto sx = r.folded_linear(l.self_out, b.attn.view(), x, Activation::None, x, {}, {},
                                    {.out = stats_out(in.stats)});                                     // x += SelfAttn W_o^T + b
    r.folded_linear(l.ffn.linear1, x, b.hidden.view(), r.activation, {}, {&l.norm2}, {}, {sx});        // hidden of LN2(x)
    const auto sy = r.folded_linear(l.ffn.linear2, b.hidden.view(), x, Activation::None, x, {}, {},
                                    {.out = stats_out(sx)});                                           // x += FFN
    return {in.x, nullptr, sy};
  }
  const Buffer& other = in.x == &b.x ? b.y : b.x;
  const BufferView h0 = in.x->view(), h1 = other.view(), h2 = in.x->view();  // the input x = LN_pending(h0)
  const auto s0 = in.pending ? in.stats : std::nullopt;
  r.folded_linear(l.self_qkv, h0, b.qkv.view(), Activation::None, {}, {in.pending}, {}, {s0});  // qkv of x
  attend();
  const auto s1 = r.folded_linear(l.self_out, b.attn.view(), h1, Activation::None, h0, {}, {in.pending},
                                  {s0, stats_out(s0)});                                         // h1 = SelfAttn W_o^T + b + x
  r.folded_linear(l.ffn.linear1, h1, b.hidden.view(), r.activation, {}, {&l.norm1}, {}, {s1});  // hidden of LN1(h1)
  const auto s2 = r.folded_linear(l.ffn.linear2, b.hidden.view(), h2, Activation::None, h1, {}, {&l.norm1},
                                  {s1, stats_out(s1)});                                         // h2 = FFN + LN1(h1)
  return {in.x, &l.norm2, s2};  // the layer's output is LN2(h2)
}

}  // namespace vkf::model
