#include "grid.hpp"
#include "reduce_config.hpp"
#include "vkformer/ops.hpp"

namespace vkf {

void Ops::layer_norm(CommandList& cl, const LayerNorm& n, const BufferView& x, const BufferView& gamma,
                     const BufferView& beta, const BufferView& y, const std::optional<BufferView>& residual,
                     const std::optional<BufferView>& sum_out, const std::optional<NormWeights>& inner) {
  if (n.rows == 0 || n.cols == 0) throw Error("layer_norm: rows and cols must be at least 1");
  if (!(n.eps >= 0)) throw Error("layer_norm: eps must be a non-negative number");
  if (sum_out && !residual) throw Error("layer_norm: sum_out needs a residual to add");
  if (inner && sum_out) throw Error("layer_norm: an inner norm and sum_out do not go together");
  const uint64_t count = uint64_t(n.rows) * n.cols;
  need(x, count, "layer_norm", "x");
  need(gamma, n.cols, "layer_norm", "gamma");
  need(beta, n.cols, "layer_norm", "beta");
  need(y, count, "layer_norm", "y");
  if (residual) need(*residual, count, "layer_norm", "residual");
  if (sum_out) need(*sum_out, count, "layer_norm", "sum_out");
  if (inner) {
    need(inner->gamma, n.cols, "layer_norm", "inner gamma");
    if (n.kind == NormKind::LayerNorm) need(inner->beta, n.cols, "layer_norm", "inner beta");
  }
  struct {
    uint32_t rows, cols;
    float eps;
    uint32_t flags;
  } push{n.rows, n.cols, n.eps, (residual ? 1u : 0u) | (sum_out ? 2u : 0u) | (inner ? 4u : 0u) | (n.kind == NormKind::RMSNorm ? 8u : 0u)};
  static_assert(sizeof push == 16, "matches Push in shaders/layer_norm.comp");
  Kernel k = kernel("layer_norm.comp", ops::row_reduce_defines(ctx_.capabilities()), 8, sizeof push);
  // Without a sum to write, y stands in for it (the kernel does not touch it); without
  // an inner norm, gamma and beta stand in for its weights.
  cl.dispatch(k, ops::grid(n.rows),
              {in(x), in(gamma), in(beta), out(y), in(residual ? *residual : x), out(sum_out ? *sum_out : y),
               in(inner ? inner->gamma : gamma), in(inner && n.kind == NormKind::LayerNorm ? inner->beta : beta)},
              push, "layer_norm");
}

}  // namespace vkf
