#include "sublayer.hpp"

namespace vkf::model {

void LayerRecorder::linear(const Linear& l, const BufferView& in, const BufferView& out, Activation act,
                           const std::optional<BufferView>& residual, const ThenNorm* then) const {
  const Gemm g{.M = rows, .N = l.out, .K = l.in, .trans_b = true, .act = act, .norm_eps = eps, .norm_rms = rms_norm,
               .b_blocks = l.blocks};
  const GemmOperands o{.a = in, .b = l.weight.view(), .c = out, .bias = l.bias.view(), .residual = residual,
                       .scratch = dequantized};
  if (!then) {
    ops.gemm(cl, g, o);
    return;
  }
  const Norm& n = *then->norm;
  ops.gemm_normed(cl, g, o,
                  {.weights = {n.gamma.view(), (rms_norm ? n.gamma : n.beta).view()}, .out = then->out,
                   .tickets = norm_tickets});
}

std::optional<RowStats> LayerRecorder::folded_linear(const Linear& l, const BufferView& in, const BufferView& out,
                                                     Activation act, const std::optional<BufferView>& residual,
                                                     Folded in_norm, Folded residual_norm,
                                                     const GemmRowStats& stats, bool gated) const {
  Gemm g{.M = rows, .N = gated ? l.out / 2 : l.out, .K = l.in, .trans_b = true, .act = act, .norm_eps = eps,
         .norm_rms = rms_norm, .glu = gated, .b_blocks = l.blocks};
  g.norm_of = in_norm.norm ? NormOf::A : residual_norm.norm ? NormOf::Residual : NormOf::None;
  GemmRowStats st = stats;
  if (g.norm_of == NormOf::None) st.in.reset();  // statistics of rows no norm reads
  return ops.gemm(cl, g,
                  {.a = in, .b = l.weight.view(), .c = out, .bias = l.bias.view(), .residual = residual,
                   .norm = in_norm.norm ? in_norm.weights() : residual_norm.weights(), .stats = st,
                   .scratch = dequantized});
}

void LayerRecorder::norm(const Norm& n, const BufferView& in, const BufferView& out) const {
  ops.layer_norm(cl, {.rows = rows, .cols = d_model, .eps = eps, .rms = rms_norm}, in, n.gamma.view(),
                 (rms_norm ? n.gamma : n.beta).view(), out);
}

void LayerRecorder::feed_forward(const FeedForward& f, const BufferView& in, const Buffer& hidden,
                                 const BufferView& out, const BufferView& residual, const ThenNorm* then) const {
  if (gated_ffn) {
    if (activation != Activation::Silu) throw Error("a gated feed-forward block runs SiLU (SwiGLU) only");
    const uint32_t F = f.linear2.in;
    if (gates_in_epilogue(f.linear1)) {
      folded_linear(f.linear1, in, hidden.view(), activation, {}, {}, {}, {}, true);  // silu(gate) * up [rows, F]
      linear(f.linear2, hidden.view(), out, Activation::None, residual, then);  // out [rows, D]
      return;
    }
    linear(f.linear1, in, hidden.view(), Activation::None);              // [gate | up] [rows, 2F]
    const BufferView product = at(hidden, uint64_t(rows) * 2 * F);
    ops.swiglu(cl, hidden.view(), product, rows, F);                     // silu(gate) * up [rows, F]
    linear(f.linear2, product, out, Activation::None, residual, then);  // out [rows, D]
    return;
  }
  linear(f.linear1, in, hidden.view(), activation);         // hidden [rows, F]
  linear(f.linear2, hidden.view(), out, Activation::None, residual, then);  // out [rows, D]
}

}  // namespace vkf::model
