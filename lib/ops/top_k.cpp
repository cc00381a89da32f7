#include "grid.hpp"
#include "vkformer/ops.hpp"

namespace vkf {

void Ops::top_k(CommandList& cl, const BufferView& x, const BufferView& values, const BufferView& indices,
                uint32_t rows, uint32_t cols, uint32_t k) {
  if (rows == 0 || cols == 0) throw Error("top_k: rows and cols must be at least 1");
  if (k == 0 || k > cols)
    throw Error("top_k: k must be between 1 and the row length (" + std::to_string(cols) + "), got " + std::to_string(k));
  need(x, uint64_t(rows) * cols, "top_k", "x");
  need(values, uint64_t(rows) * k, "top_k", "values");
  need(indices, uint64_t(rows) * k, "top_k", "indices", DType::F32);
  struct {
    uint32_t rows, cols, k;
  } push{rows, cols, k};
  static_assert(sizeof push == 12, "matches Push in shaders/top_k.comp");
  cl.dispatch(kernel("top_k.comp", {}, 3, sizeof push), ops::grid(rows), {in(x), out(values), out(indices)}, push,
              "top_k");
}

}  // namespace vkf
