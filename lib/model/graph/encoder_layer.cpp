// post-norm: x = LN(x + SelfAttn(x)); x = LN(x + FFN(x))
// pre-norm:  x = x + SelfAttn(LN(x)); x = x + FFN(LN(x))
#include "encoder_layer.hpp"

namespace vkf::model {

uint32_t encoder_row_stats_parts(const Ops& ops, uint32_t rows, uint32_t D, uint32_t F) {
  // The two GEMMs that write them: the attention output projection and FFN down.
  return std::max(ops.gemm_row_stats_parts({.M = rows, .N = D, .K = D, .trans_b = true}),
                  ops.gemm_row_stats_parts({.M = rows, .N = D, .K = F, .trans_b = true}));
}

Stream record_encoder_layer(const LayerRecorder& r, const EncoderLayer& l, const EncoderShape& s,
                            const EncoderBuffers& b, const std::optional<BufferView>& key_mask, Stream x) {
  const uint32_t W = s.heads * s.head_dim;  // the attention's width (d_model's unless a head's width is set apart)
  const Attention a{.batch = s.batch, .heads = s.heads, .head_dim = s.head_dim, .q_len = s.seq_len,
                    .kv_len = s.seq_len, .q_row_stride = 3 * W, .kv_batch_stride = uint64_t(s.seq_len) * 3 * W,
                    .kv_row_stride = 3 * W};
  auto self_attention = [&](const SublayerIn& in, const SublayerOut& out) {
    r.project(l.self_qkv, in, b.qkv.view());  // qkv [rows, 3W]: q | k | v
    r.ops.attention(r.cl, a, r.at(b.qkv, 0), r.at(b.qkv, W), r.at(b.qkv, 2 * W), b.attn.view(), key_mask);  // attn [rows, W]
    return r.project_out(l.self_out, b.attn.view(), out);  // out [rows, D]
  };
  auto feed_forward = [&](const SublayerIn& in, const SublayerOut& out) {
    return r.feed_forward(l.ffn, in, b.hidden, out);  // out [rows, D]
  };
  x = r.sublayer(x, l.norm1, b.x, b.y, self_attention);
  return r.sublayer(x, l.norm2, b.x, b.y, feed_forward);
}

}  // namespace vkf::model
