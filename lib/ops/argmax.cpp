#include "grid.hpp"
#include "vkformer/ops.hpp"

namespace vkf {

void Ops::argmax(CommandList& cl, const BufferView& x, const BufferView& indices, uint32_t rows, uint32_t cols,
                 bool flag_non_finite) {
  if (rows == 0 || cols == 0) throw Error("argmax: rows and cols must be at least 1");
  need(x, uint64_t(rows) * cols, "argmax", "x");
  need(indices, rows, "argmax", "indices", DType::F32);
  struct {
    uint32_t rows, cols, flag_non_finite;
  } push{rows, cols, flag_non_finite ? 1u : 0u};
  static_assert(sizeof push == 12, "matches Push in shaders/argmax.comp");
  cl.dispatch(kernel("argmax.comp", {}, 2, sizeof push), ops::grid(rows), {in(x), out(indices)}, push, "argmax");
}

}  // namespace vkf
