// Drawing tokens on the GPU: shaders/sample.comp.
#include <cmath>

#include "grid.hpp"
#include "vkformer/ops.hpp"

namespace vkf {

void Ops::sample(CommandList& cl, const Sampling& s, const BufferView& x, const BufferView& indices, uint32_t rows,
                 uint32_t cols, const DecodeStep& step) {
  if (rows == 0 || cols == 0) throw Error("sample: rows and cols must be at least 1");
  if (!(s.temperature > 0) || !std::isfinite(1.0f / s.temperature))
    throw Error("sample: temperature must be above 0 (and 1/temperature finite), got " + std::to_string(s.temperature));
  if (!(s.top_p > 0 && s.top_p <= 1)) throw Error("sample: top_p must be in (0, 1], got " + std::to_string(s.top_p));
  need(x, uint64_t(rows) * cols, "sample", "x");
  need(indices, rows, "sample", "indices", DType::F32);  // uint32: fp32-sized
  need_step(step, "sample");
  const struct {
    uint32_t rows, cols, top_k, seed_lo, seed_hi;
    float inv_temperature, top_p;
    uint32_t pad;
  } push{rows, cols, s.top_k, uint32_t(s.seed), uint32_t(s.seed >> 32), 1.0f / s.temperature, s.top_p, 0};
  static_assert(sizeof push == 32, "matches Push in shaders/sample.comp");
  cl.dispatch(kernel("sample.comp", {}, 3, sizeof push), ops::grid(rows), {in(x), out(indices), in(step.state)}, push,
              "sample");
}

}  // namespace vkf
