#pragma once
// What every transformer layer is made of, recorded into a command list: Linear,
// LayerNorm, the feed-forward block, and the residual sublayer rule, written once.
#include <optional>

#include "buffers.hpp"
#include "weights.hpp"

namespace vkf::model {

// A LayerNorm to fold into the GEMM that reads its output, or none.
struct Folded {
  const Norm* norm = nullptr;
  std::optional<NormWeights> weights() const {
    if (!norm) return std::nullopt;
    return NormWeights{norm->gamma.view(), norm->beta.view()};
  }
};

// A post-norm sublayer's norm, handed to its last product: that GEMM writes x + f(x)
// and LN of it to `out` (Ops::gemm_normed: in its own dispatch where it can).
struct ThenNorm {
  const Norm* norm = nullptr;
  BufferView out;
};

// The plan of one pass, made before it is recorded (by the graph, from the device's
// rules and the pass's shape): where each LayerNorm runs and how a decode step attends.
// The layer functions follow it; their bodies read as the formulas, whatever it says.
struct LayerPlan {
  // Each LayerNorm folded into the GEMMs that read its output: pre-norm, the A side of
  // the next projection; post-norm, a norm left pending on the stream, folded into the
  // next sublayer's input and residual (Stream). Else each norm is a dispatch.
  bool fold_norms = false;
  // Two buffers that take turns holding the row statistics (RowStats) the residual GEMMs
  // write and the folded norms read ([rows, parts, 4] fp32 each); none where the device's
  // GEMMs write none.
  const Buffer* stats[2] = {nullptr, nullptr};
  // How a decode step's attention runs: as any pass's (Ops::attention), as decode_attention
  // then the output projection's GEMM, or both in one dispatch (Ops::project_in_decode_attention).
  enum class StepAttention { Generic, Decode, DecodeProjected } step_attention = StepAttention::Generic;
};

// The residual stream between sublayers: the rows of *x or, post-norm with folded norms,
// LN_pending(*x) (a layer's last norm is never run on its own: the next GEMMs apply it as
// they read). stats: of *x's rows, where the GEMM that wrote them wrote them.
struct Stream {
  const Buffer* x = nullptr;
  const Norm* pending = nullptr;
  std::optional<RowStats> stats;
};

// What a sublayer reads: `view`, normalised by `norm` as it is read (folded), or as it is.
struct SublayerIn {
  BufferView view;
  Folded norm;
  std::optional<RowStats> stats;  // of view's rows, for the folded norm
};

// Where a sublayer's last product writes: out = f + residual, the residual normalised by
// residual_norm as it is read; with `then`, LN(out) to then->out as well (ThenNorm);
// stats_out: room for out's row statistics.
struct SublayerOut {
  BufferView out, residual;
  Folded residual_norm;
  std::optional<RowStats> residual_stats;
  const ThenNorm* then = nullptr;
  std::optional<BufferView> stats_out;
};

// One pass over `rows` token rows of width d_model: the ops, the list being recorded,
// the settings every layer of a stack shares, and the pass's plan.
struct LayerRecorder {
  Ops& ops;
  CommandList& cl;
  uint32_t rows = 1, d_model = 1;
  bool norm_first = false;
  float eps = 1e-5f;
  Activation activation = Activation::Relu;
  NormKind norm_kind = NormKind::LayerNorm;  // every norm's
  bool gated_ffn = false;  // the FFN's linear1 is [gate | up], [2 FFN, D]: down(act(gate) * up)
  // A uint32 ticket counter, zero between dispatches, for products that normalise their
  // own output (OutputNorm::tickets); none: a layer_norm dispatch after them.
  std::optional<BufferView> norm_tickets;
  // Room for one weight in blocks dequantized (Model::Impl::dequantized_values), for
  // products of more rows than the decode-step kernel takes.
  std::optional<BufferView> dequantized;
  LayerPlan plan = {};

  // out[rows, l.out] = act(in[rows, l.in] W^T + b) (+ residual[rows, l.out]); with
  // `then`, also then->out = LN(out) (ThenNorm).
  void linear(const Linear& l, const BufferView& in, const BufferView& out, Activation act = Activation::None,
              const std::optional<BufferView>& residual = {}, const ThenNorm* then = nullptr) const;
  // out[rows, D] = LayerNorm(in[rows, D])
  void norm(const Norm& n, const BufferView& in, const BufferView& out) const;
  // out[rows, l.out] = act(LN?(in) W^T + b) + LN?(residual): `in_norm` folded into the
  // reading of `in`, `residual_norm` into the reading of the residual (at most one).
  // Row statistics (RowStats): those of the rows the folded norm reads, where a GEMM
  // wrote them, and room for out's; returns out's where they were written.
  std::optional<RowStats> folded_linear(const Linear& l, const BufferView& in, const BufferView& out, Activation act,
                                        const std::optional<BufferView>& residual, Folded in_norm,
                                        Folded residual_norm, const GemmRowStats& stats = {},
                                        bool gated = false) const;
  // A sublayer's projection of its input: out[rows, l.out] = act(in W^T + b) (gated: out
  // [rows, l.out / 2] = act(gate) * up, Gemm::glu).
  void project(const Linear& l, const SublayerIn& in, const BufferView& out, Activation act = Activation::None,
               bool gated = false) const {
    folded_linear(l, in.view, out, act, {}, in.norm, {}, {.in = in.stats}, gated);
  }
  // A sublayer's last product: o.out[rows, l.out] = in W^T + b + residual (SublayerOut).
  // Returns the statistics of o.out's rows where it wrote them.
  std::optional<RowStats> project_out(const Linear& l, const BufferView& in, const SublayerOut& o) const {
    if (o.then) {
      linear(l, in, o.out, Activation::None, o.residual, o.then);
      return std::nullopt;
    }
    return folded_linear(l, in, o.out, Activation::None, o.residual, {}, o.residual_norm,
                         {.in = o.residual_stats, .out = o.stats_out});
  }
  // Whether a gated FFN's up projection (linear1 = [gate | up]) runs as one product with
  // act(gate) * up in its epilogue (Gemm::glu): wherever its weight fits one binding;
  // else [gate | up] is written, then swiglu (one dispatch more).
  bool gates_in_epilogue(const Linear& linear1) const { return gated_ffn && ops.fits_one_binding(linear1.weight.size()); }
  // The feed-forward sublayer: o.out = linear2(act(linear1(in))) + residual, hidden
  // [rows, dim_feedforward]; gated: linear2(act(gate) * up), hidden [rows, 3 dim_feedforward]
  // ([gate | up], then the product, where the gate is not in linear1's epilogue).
  std::optional<RowStats> feed_forward(const FeedForward& f, const SublayerIn& in, const Buffer& hidden,
                                       const SublayerOut& o) const;
  // A view of `b` from element `first` on: model code counts elements, never bytes.
  BufferView at(const Buffer& b, uint64_t first) const { return elements(b, ops.dtype(), first); }

  // The residual sublayer around f, for both orders of nn.Transformer (norm_first):
  //   post-norm  x = LN(x + f(x))      pre-norm  x = x + f(LN(x))
  // f(SublayerIn, SublayerOut) records the sublayer, its last GEMM adding the residual
  // (and returning its output rows' statistics). Where the norm runs is the plan's:
  //   pre-norm:  LN(x) to the other buffer first, or folded into f's projections of x;
  //              x stays in place.
  //   post-norm: f writes x + f(x) to the other buffer, whose last GEMM writes LN of it
  //              back to x (ThenNorm); or, folded, the stream moves to the other buffer
  //              with LN pending (a norm of the residual reads the whole row while the
  //              sublayer writes it, so it cannot be in place).
  // a, b: the pass's two [rows, D] buffers, one of which the stream is in.
  template <class F>
  Stream sublayer(const Stream& s, const Norm& n, const Buffer& a, const Buffer& b, F&& f) const {
    const Buffer& other = s.x == &a ? b : a;
    if (norm_first) {
      if (s.pending) throw Error("a pre-norm layer takes no pending LayerNorm");
      SublayerIn in{s.x->view(), {&n}, s.stats};
      if (!plan.fold_norms) {
        norm(n, s.x->view(), other.view());
        in = {other.view()};
      }
      return {s.x, nullptr, f(in, SublayerOut{.out = s.x->view(), .residual = s.x->view(), .stats_out = stats_out(s.stats)})};
    }
    if (plan.fold_norms) {
      std::optional<RowStats> stats;  // of the rows the pending norm reads
      if (s.pending) stats = s.stats;
      return {&other, &n,
              f(SublayerIn{s.x->view(), {s.pending}, stats},
                SublayerOut{.out = other.view(), .residual = s.x->view(), .residual_norm = {s.pending},
                            .residual_stats = stats, .stats_out = stats_out(stats)})};
    }
    const ThenNorm then{&n, s.x->view()};
    f(SublayerIn{s.x->view()}, SublayerOut{.out = other.view(), .residual = s.x->view(), .then = &then});
    return {s.x, nullptr, std::nullopt};
  }

 private:
  // The stats buffer a residual GEMM writes: the one not holding `reading` (those its
  // folded norm reads), none where the plan has none.
  std::optional<BufferView> stats_out(const std::optional<RowStats>& reading) const {
    if (!plan.stats[0] || !*plan.stats[0]) return std::nullopt;
    return (reading && reading->view.alloc == plan.stats[0]->view().alloc ? *plan.stats[1] : *plan.stats[0]).view();
  }
};

}  // namespace vkf::model
