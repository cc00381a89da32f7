#include "grid.hpp"
#include "vkformer/ops.hpp"

namespace vkf {

void Ops::argmax(CommandList& cl, const BufferView& x, const BufferView& indices, uint32_t rows, uint32_t cols) {
  if (rows == 0 || cols == 0) throw Error("argmax: rows and cols must be at least 1");
  need(x, uint64_t(rows) * cols, "argmax", "x");
  need(indices, rows, "argmax", "indices", DType::F32);
  struct {
    uint32_t rows, cols;
  } push{rows, cols};
  static_assert(sizeof push == 8, "matches Push in shaders/argmax.comp");
  cl.dispatch(kernel("argmax.comp", {}, 2, sizeof push), ops::grid(rows), {in(x), out(indices)}, push, "argmax");
}

}  // namespace vkf
