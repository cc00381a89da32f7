// post-norm: x = LN(x + SelfAttn(x)); x = LN(x + FFN(x))
// pre-norm:  x = x + SelfAttn(LN(x)); x = x + FFN(LN(x))
// Residual adds ride in the GEMM epilogues.
#include "model/encoder_stack.hpp"

namespace vkf::model {

void record_encoder_layer(Ops& ops, CommandList& cl, const EncoderLayer& l, const EncoderShape& s,
                          const EncoderBuffers& b, const std::optional<BufferView>& key_mask) {
  const uint32_t D = s.d_model, rows = s.batch * s.seq_len;
  const uint64_t e = dtype_bytes(ops.dtype());
  auto linear = [&](const Linear& lin, const BufferView& in, const BufferView& out, Activation act = Activation::None,
                    std::optional<BufferView> residual = std::nullopt) {
    ops.gemm(cl, {.M = rows, .N = lin.out, .K = lin.in, .trans_b = true, .act = act}, in, lin.weight.view(), out,
             lin.bias.view(), residual);
  };
  auto norm = [&](const Norm& n, const BufferView& in, const BufferView& out) {
    ops.layer_norm(cl, {.rows = rows, .cols = D, .eps = s.eps}, in, n.gamma.view(), n.beta.view(), out);
  };
  auto attention = [&] {
    Attention a{.batch = s.batch, .heads = s.heads, .head_dim = D / s.heads, .q_len = s.seq_len, .kv_len = s.seq_len,
                .q_row_stride = 3 * D, .kv_batch_stride = uint64_t(s.seq_len) * 3 * D, .kv_row_stride = 3 * D};
    ops.attention(cl, a, b.qkv.view(0), b.qkv.view(D * e), b.qkv.view(2 * D * e), b.attn.view(), key_mask);
  };
  if (!s.norm_first) {
    linear(l.self_qkv, b.x.view(), b.qkv.view());
    attention();
    linear(l.self_out, b.attn.view(), b.y.view(), Activation::None, b.x.view());
    norm(l.norm1, b.y.view(), b.x.view());
    linear(l.linear1, b.x.view(), b.hidden.view(), s.activation);
    linear(l.linear2, b.hidden.view(), b.y.view(), Activation::None, b.x.view());
    norm(l.norm2, b.y.view(), b.x.view());
  } else {
    norm(l.norm1, b.x.view(), b.y.view());
    linear(l.self_qkv, b.y.view(), b.qkv.view());
    attention();
    linear(l.self_out, b.attn.view(), b.x.view(), Activation::None, b.x.view());
    norm(l.norm2, b.x.view(), b.y.view());
    linear(l.linear1, b.y.view(), b.hidden.view(), s.activation);
    linear(l.linear2, b.hidden.view(), b.x.view(), Activation::None, b.x.view());
  }
}

}  // namespace vkf::model
