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

// One pass over `rows` token rows of width d_model: the ops, the list being recorded,
// and the settings every layer of a stack shares.
struct LayerRecorder {
  Ops& ops;
  CommandList& cl;
  uint32_t rows = 1, d_model = 1;
  bool norm_first = false;
  float eps = 1e-5f;
  Activation activation = Activation::Relu;
  bool rms_norm = false;   // every norm an RMSNorm (Llama)
  bool gated_ffn = false;  // the FFN's linear1 is [gate | up], [2 FFN, D]: down(act(gate) * up)
  // A uint32 ticket counter, zero between dispatches, for products that normalise their
  // own output (OutputNorm::tickets); none: a layer_norm dispatch after them.
  std::optional<BufferView> norm_tickets;
  // Room for one weight in blocks dequantized (Model::Impl::dequantized_values), for
  // products of more rows than the decode-step kernel takes.
  std::optional<BufferView> dequantized;

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
  // Whether a gated FFN's up projection (linear1 = [gate | up]) runs as one product with
  // act(gate) * up in its epilogue (Gemm::glu): wherever its weight fits one binding;
  // else [gate | up] is written, then swiglu (one dispatch more). `gated`, above, asks
  // folded_linear for that product: out [rows, l.out / 2].
  bool gates_in_epilogue(const Linear& linear1) const { return gated_ffn && ops.fits_one_binding(linear1.weight.size()); }
  // out = residual + linear2(act(linear1(in))), hidden: [rows, dim_feedforward]; gated:
  // out = residual + linear2(act(gate) * up), hidden [rows, 3 dim_feedforward] ([gate | up] then the product)
  void feed_forward(const FeedForward& f, const BufferView& in, const Buffer& hidden, const BufferView& out,
                    const BufferView& residual, const ThenNorm* then = nullptr) const;
  // A view of `b` from element `first` on: model code counts elements, never bytes.
  BufferView at(const Buffer& b, uint64_t first) const { return elements(b, ops.dtype(), first); }

  // The residual sublayer around f, for both orders of nn.Transformer (norm_first):
  //   post-norm  x = LN(x + f(x))      pre-norm  x = x + f(LN(x))
  // f(in, out, residual, then) records the sublayer reading `in` and writing `out` with
  // the residual added in its last GEMM's epilogue, which, given `then`, also writes
  // LN(out) to then->out (post-norm: the norm in the same dispatch where it can be).
  // x: [rows, D] in and out; scratch: [rows, D].
  template <class F>
  void residual_sublayer(const Norm& n, const Buffer& x, const Buffer& scratch, F&& f) const {
    if (norm_first) {
      norm(n, x.view(), scratch.view());
      f(scratch.view(), x.view(), x.view(), static_cast<const ThenNorm*>(nullptr));
    } else {
      const ThenNorm then{&n, x.view()};
      f(x.view(), scratch.view(), x.view(), &then);  // scratch = x + f(x), x = LN(scratch)
    }
  }
};

}  // namespace vkf::model
