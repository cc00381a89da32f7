#include "grid.hpp"
#include "reduce_config.hpp"
#include "vkformer/ops.hpp"

namespace vkf {

void Ops::softmax(CommandList& cl, const Softmax& s, const BufferView& x, const BufferView& y,
                  const std::optional<BufferView>& mask) {
  if (s.rows == 0 || s.cols == 0) throw Error("softmax: rows and cols must be at least 1");
  if (s.mask_rows == 0 || s.mask_row_div == 0 || s.causal_rows == 0)
    throw Error("softmax: mask_rows, mask_row_div and causal_rows must be at least 1");
  need(x, uint64_t(s.rows) * s.cols, "softmax", "x");
  need(y, uint64_t(s.rows) * s.cols, "softmax", "y");
  if (mask) need(*mask, uint64_t(s.mask_rows) * s.cols, "softmax", "mask");
  struct {
    uint32_t rows, cols;
    float scale;
    uint32_t mask_rows, mask_row_div, causal_rows, causal_offset, flags;
  } push{s.rows, s.cols, s.scale, s.mask_rows, s.mask_row_div, s.causal_rows, s.causal_offset,
         (mask ? 1u : 0u) | (s.causal ? 2u : 0u)};
  static_assert(sizeof push == 32, "matches Push in shaders/softmax.comp");
  Kernel k = kernel("softmax.comp", ops::row_reduce_defines(ctx_.capabilities()), 3, sizeof push);
  cl.dispatch(k, ops::grid(s.rows), {in(x), out(y), in(mask ? *mask : x)}, push, "softmax");
}

}  // namespace vkf
