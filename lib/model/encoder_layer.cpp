// post-norm: x = LN(x + SelfAttn(x)); x = LN(x + FFN(x))
// pre-norm:  x = x + SelfAttn(LN(x)); x = x + FFN(LN(x))
#include "encoder_layer.hpp"

namespace vkf::model {

void record_encoder_layer(const LayerRecorder& r, const EncoderLayer& l, const EncoderShape& s,
                          const EncoderBuffers& b, const std::optional<BufferView>& key_mask) {
  const uint32_t D = r.d_model;
  auto self_attention = [&](const BufferView& in, const BufferView& out, const BufferView& residual) {
    r.linear(l.self_qkv, in, b.qkv.view());  // qkv [rows, 3D]: q | k | v
    const Attention a{.batch = s.batch, .heads = s.heads, .head_dim = D / s.heads, .q_len = s.seq_len,
                      .kv_len = s.seq_len, .q_row_stride = 3 * D, .kv_batch_stride = uint64_t(s.seq_len) * 3 * D,
                      .kv_row_stride = 3 * D};
    r.ops.attention(r.cl, a, r.at(b.qkv, 0), r.at(b.qkv, D), r.at(b.qkv, 2 * D), b.attn.view(), key_mask);
    r.linear(l.self_out, b.attn.view(), out, Activation::None, residual);  // out [rows, D]
  };
  auto feed_forward = [&](const BufferView& in, const BufferView& out, const BufferView& residual) {
    r.feed_forward(l.ffn, in, b.hidden, out, residual);
  };
  r.residual_sublayer(l.norm1, b.x, b.y, self_attention);
  r.residual_sublayer(l.norm2, b.x, b.y, feed_forward);
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
  if (r.norm_first) {
    if (in.pending) throw Error("encoder: a pre-norm layer takes no pending LayerNorm");
    const BufferView x = in.x->view();                                                        // [rows, D]
    r.folded_linear(l.self_qkv, x, b.qkv.view(), Activation::None, {}, {&l.norm1}, {});        // qkv of LN1(x)
    attend();
    r.folded_linear(l.self_out, b.attn.view(), x, Activation::None, x, {}, {});                // x += SelfAttn W_o^T + b
    r.folded_linear(l.ffn.linear1, x, b.hidden.view(), r.activation, {}, {&l.norm2}, {});      // hidden of LN2(x)
    r.folded_linear(l.ffn.linear2, b.hidden.view(), x, Activation::None, x, {}, {});           // x += FFN
    return {in.x, nullptr};
  }
  const Buffer& other = in.x == &b.x ? b.y : b.x;
  const BufferView h0 = in.x->view(), h1 = other.view(), h2 = in.x->view();  // the input x = LN_pending(h0)
  r.folded_linear(l.self_qkv, h0, b.qkv.view(), Activation::None, {}, {in.pending}, {});     // qkv of x
  attend();
  r.folded_linear(l.self_out, b.attn.view(), h1, Activation::None, h0, {}, {in.pending});   // h1 = SelfAttn W_o^T + b + x
  r.folded_linear(l.ffn.linear1, h1, b.hidden.view(), r.activation, {}, {&l.norm1}, {});    // hidden of LN1(h1)
  r.folded_linear(l.ffn.linear2, b.hidden.view(), h2, Activation::None, h1, {}, {&l.norm1});  // h2 = FFN + LN1(h1)
  return {in.x, &l.norm2};  // the layer's output is LN2(h2)
}

}  // namespace vkf::model
