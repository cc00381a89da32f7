// Rotary position embedding (shaders/rope.comp) and its table.
#include <cmath>

#include "grid.hpp"
#include "vkformer/ops.hpp"

namespace vkf {

std::vector<float> rotary_positions(uint32_t positions, const std::vector<float>& inv_freq, float position_scale) {
  if (uint64_t(positions) * inv_freq.size() > (1ull << 26))
    throw Error("rotary_positions: positions x head_dim / 2 is more than 2^26");
  std::vector<float> t(uint64_t(positions) * inv_freq.size() * 2);
  for (uint32_t p = 0; p < positions; ++p)
    for (size_t j = 0; j < inv_freq.size(); ++j) {
      const float angle = (float(p) / position_scale) * inv_freq[j];  // fp32, as transformers takes it
      t[(uint64_t(p) * inv_freq.size() + j) * 2] = float(std::cos(double(angle)));
      t[(uint64_t(p) * inv_freq.size() + j) * 2 + 1] = float(std::sin(double(angle)));
    }
  return t;
}

void Ops::rope(CommandList& cl, const Rope& r0, const BufferView& x, const BufferView& table,
               const std::optional<DecodeStep>& step, const std::optional<BufferView>& position_shift,
               const std::optional<RopeTarget>& second) {
  auto u32 = [](uint64_t v) {
    if (v > 0xffffffffull) throw Error("rope: a stride does not fit 32 bits");
    return uint32_t(v);
  };
  // One target's checks and defaults: its heads fit its rows, its rows fit x.
  auto checked = [&](Rope r, const BufferView& t, const char* what) {
    if (r.batch == 0 || r.rows == 0 || r.heads == 0) throw Error("rope: batch, rows and heads must be at least 1");
    if (r.head_dim < 2 || r.head_dim % 2) throw Error("rope: head_dim must be even, got " + std::to_string(r.head_dim));
    if (r.rows_from_step && !step) throw Error("rope: rows_from_step needs a decode step");
    const uint64_t width = uint64_t(r.heads) * r.head_dim;
    if (!r.row_stride) r.row_stride = width;
    if (!r.batch_stride) r.batch_stride = r.rows * r.row_stride;
    if (r.row_stride < width) throw Error("rope: row_stride is smaller than a row's heads");
    // Rows reach at most row0 + rows - 1, row0 the step's row at most max_step.
    const uint64_t last_row = (r.rows_from_step ? step->max_step : 0) + r.rows - 1;
    need(t, (r.batch - 1) * r.batch_stride + last_row * r.row_stride + width, "rope", what);
    u32(r.batch_stride), u32(r.row_stride);
    return r;
  };
  const Rope r = checked(r0, x, "x");
  std::optional<Rope> r2;
  if (second) {
    r2 = checked(second->rope, second->x, "second x");
    if (r2->batch != r.batch || r2->rows != r.rows || r2->head_dim != r.head_dim ||
        r2->position_offset != r.position_offset || r2->positions != r.positions)
      throw Error("rope: the second target must have the first's batch, rows, head_dim and positions");
  }
  const uint32_t half = r.head_dim / 2;
  const uint64_t last_position = (step ? step->max_step : r.position_offset) + uint64_t(r.rows) - 1;
  if (last_position >= r.positions)
    throw Error("rope: positions up to " + std::to_string(last_position + 1) + " are needed but the table has " +
                std::to_string(r.positions));
  need(table, uint64_t(r.positions) * half * 2, "rope", "table", DType::F32);
  if (step) need_step(*step, "rope");
  if (position_shift) need(*position_shift, r.batch, "rope", "position shift", DType::F32);  // uint32
  const Placed px = place(x, "rope");
  const Placed px2 = second ? place(second->x, "rope") : px;
  const uint64_t count = uint64_t(r.batch) * r.rows * (r.heads + (r2 ? r2->heads : 0)) * half;
  struct {
    uint32_t batch, rows, heads, half_dim;
    uint32_t batch_stride, row_stride, base;
    uint32_t position_offset, positions, flags;
    uint32_t heads2, batch_stride2, row_stride2, base2;
  } push{r.batch, r.rows, r.heads, half, u32(r.batch_stride), u32(r.row_stride), px.base, r.position_offset,
         r.positions,
         (step ? 1u : 0u) | (r.rows_from_step ? 2u : 0u) | (position_shift ? 4u : 0u) |
             (r2 && r2->rows_from_step ? 8u : 0u),
         r2 ? r2->heads : 0u, r2 ? u32(r2->batch_stride) : 0u, r2 ? u32(r2->row_stride) : 0u, px2.base};
  static_assert(sizeof push == 56, "matches Push in shaders/rope.comp");
  cl.dispatch(kernel("rope.comp", {}, 5, sizeof push), ops::grid(ops::ceil_div(count, 256)),
              {inout(px.view), in(table), in(step ? step->state : table), in(position_shift ? *position_shift : table),
               inout(px2.view)},
              push, "rope");
}

}  // namespace vkf
