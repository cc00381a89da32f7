#include "sublayer.hpp"

namespace vkf::model {

void LayerRecorder::linear(const Linear& l, const BufferView& in, const BufferView& out, Activation act,
                           const std::optional<BufferView>& residual, const ThenNorm* then) const {
  const Gemm g{.M = rows, .N = l.out, .K = l.in, .trans_b = true, .act = act, .norm_eps = eps, .norm_kind = norm_kind,
               .b_blocks = l.blocks};
  const GemmOperands o{.a = in, .b = l.weight.view(), .c = out, .bias = l.bias.view(), .residual = residual,
                       .scratch = dequantized};
  if (!then) {
    ops.gemm(cl, g, o);
    return;
  }
  const Norm& n = *then->norm;
  ops.gemm_normed(cl, g, o,
                  {.weights = {n.gamma.view(), (norm_kind == NormKind::RMSNorm ? n.gamma : n.beta).view()}, .out = then->out,
                   .tickets = norm_tickets});
}

std::optional<RowStats> LayerRecorder::folded_linear(const Linear& l, const BufferView& in, const BufferView& out,
                                                     Activation act, const std::optional<BufferView>& residual,
                                                     Folded in_norm, Folded residual_norm,
                                                     const GemmRowStats& stats, bool gated) const {
  Gemm g{.M = rows, .N = gated ? l.out / 2 : l.out, .K = l.in, .trans_b = true, .act = act, .norm_eps = eps,
         .norm_kind = norm_kind, .glu = gated, .b_blocks = l.blocks};
  g.norm_of = in_norm.norm ? NormOf::A : residual_norm.norm ? NormOf::Residual : NormOf::None;
  GemmRowStats st = stats;
  if (g.norm_of == NormOf::None) st.in.reset();  // statistics of rows no norm reads
  return ops.gemm(cl, g,
                  {.a = in, .b = l.weight.view(), .c = out, .bias = l.bias.view(), .residual = residual,
                   .norm = in_norm.norm ? in_norm.weights() : residual_norm.weights(), .stats = st,
                   .scratch = dequantized});
}

void LayerRecorder::norm(const Norm& n, const BufferView& in, const BufferView& out) const {
  ops.layer_norm(cl, {.rows = rows, .cols = d_model, .eps = eps, .kind = norm_kind}, in, n.gamma.view(),
                 (norm_kind == NormKind::RMSNorm ? n.gamma : n.beta).view(), out);
}

std::optional<RowStats> LayerRecorder::feed_forward(const FeedForward& f, const SublayerIn& in, const Buffer& hidden,
                                                    const SublayerOut& o) const {
  if (gated_ffn && activation != Activation::Silu) throw Error("a gated feed-forward block runs SiLU (SwiGLU) only");
  BufferView h = hidden.view();
  if (gated_ffn && !gates_in_epilogue(f.linear1)) {
    const uint32_t F = f.linear2.in;
    project(f.linear1, in, hidden.view());  // [gate | up] [rows, 2F]
    h = at(hidden, uint64_t(rows) * 2 * F);
    ops.swiglu(cl, hidden.view(), h, rows, F);  // silu(gate) * up [rows, F]
  } else {
    project(f.linear1, in, hidden.view(), activation, gated_ffn);  // hidden [rows, F]: act(in W1^T + b1), or act(gate) * up
  }
  return project_out(f.linear2, h, o);  // out [rows, D]
}

}  // namespace vkf::model
