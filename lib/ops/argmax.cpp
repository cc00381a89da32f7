#include "grid.hpp"
#include "reduce_config.hpp"
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
  // CPU drivers: one subgroup a row, no barriers, rows of whole 16-byte units loaded a
  // unit a lane (shaders/argmax.comp). A GPU keeps 256 invocations: one subgroup walking
  // a vocabulary of 32000 or more would wait on its loads.
  const Capabilities& caps = ctx_.capabilities();
  Defines d;
  if (caps.type == DeviceType::Cpu) {
    d = ops::row_reduce_defines(caps);
    if (uint64_t(cols) * dtype_bytes(dtype_) % 16 == 0) d.emplace_back("X_UNITS", "1");
  }
  cl.dispatch(kernel("argmax.comp", d, 2, sizeof push), ops::grid(rows), {in(x), out(indices)}, push, "argmax");
}

}  // namespace vkf
