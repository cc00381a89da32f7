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

}  // namespace vkf::model
