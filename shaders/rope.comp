#version 450
// Rotary position embedding, rotate-half as transformers' Llama applies it, in place on
// vectors [batch, rows, heads, head_dim] (queries in scratch, or keys in a KV cache):
// for each pair (j, j + d/2) of a row at position p,
//   x_j <- x_j cos(p w_j) - x_{j+d/2} sin(p w_j),  x_{j+d/2} <- x_{j+d/2} cos(p w_j) + x_j sin(p w_j)
// with cos and sin from the host's table [positions, d/2, 2] (fp32, from the angles
// transformers computes in fp32: GPU sin and cos of large angles differ between vendors).
// Rows and positions: row i of batch item b is at row row0 + i (row0: 0, or the decode
// step's cache row with FLAG_ROWS_FROM_STEP) and position p0 + i - shift[b] (p0: the
// push constant, or the step's position with FLAG_STEP; shift: each sequence's left
// padding with FLAG_SHIFTED, positions below 0 taking 0: the padding's own rows).
// A second target (binding 4: a layer's keys in its cache beside its queries) is rotated
// in the same dispatch, with its own heads, strides and rows (FLAG_SECOND_ROWS_FROM_STEP)
// and the same batch, rows and positions: its elements follow the first's.
#extension GL_GOOGLE_include_directive : require
#include "types.glsl"

layout(local_size_x = 256) in;
#include "grid.glsl"  // after the local size: it reads gl_WorkGroupSize
layout(std430, set = 0, binding = 0) buffer X { store_t x[]; };
layout(std430, set = 0, binding = 1) readonly buffer Table { vec2 table[]; };  // [positions, half] (cos, sin)
#define STEP_BINDING 2
#include "step.glsl"
layout(std430, set = 0, binding = 3) readonly buffer Shift { uint position_shift[]; };  // [batch]
layout(std430, set = 0, binding = 4) buffer X2 { store_t x2[]; };  // the second target (heads2 > 0)

const uint FLAG_STEP = 1u, FLAG_ROWS_FROM_STEP = 2u, FLAG_SHIFTED = 4u, FLAG_SECOND_ROWS_FROM_STEP = 8u;
layout(push_constant) uniform Push {
  uint batch, rows, heads, half_dim;
  uint batch_stride, row_stride, base;
  uint position_offset, positions, flags;
  uint heads2, batch_stride2, row_stride2, base2;
} pc;

void main() {
  const uint first = pc.batch * pc.rows * pc.heads * pc.half_dim;
  uint e = flat_index();
  if (e >= first + pc.batch * pc.rows * pc.heads2 * pc.half_dim) return;
  const bool second = e >= first;
  if (second) e -= first;
  const uint heads = second ? pc.heads2 : pc.heads;
  const uint j = e % pc.half_dim, h = (e / pc.half_dim) % heads;
  const uint i = (e / (pc.half_dim * heads)) % pc.rows, b = e / (pc.half_dim * heads * pc.rows);
  const bool stepped = (pc.flags & FLAG_STEP) != 0u;
  const bool step_rows = (pc.flags & (second ? FLAG_SECOND_ROWS_FROM_STEP : FLAG_ROWS_FROM_STEP)) != 0u;
  const uint row = (step_rows ? step_state[DECODE_STEP_WORD] : 0u) + i;
  uint position = (stepped ? step_state[DECODE_POSITION_WORD] : pc.position_offset) + i;
  if ((pc.flags & FLAG_SHIFTED) != 0u) position = position >= position_shift[b] ? position - position_shift[b] : 0u;
  position = min(position, pc.positions - 1u);  // the host bounds it; a stray step reads the last row
  const vec2 cs = table[position * pc.half_dim + j];
  if (second) {
    const uint at = pc.base2 + b * pc.batch_stride2 + row * pc.row_stride2 + h * 2u * pc.half_dim + j;
    const float v1 = float(x2[at]), v2 = float(x2[at + pc.half_dim]);
    x2[at] = store_t(v1 * cs.x - v2 * cs.y);
    x2[at + pc.half_dim] = store_t(v2 * cs.x + v1 * cs.y);
  } else {
    const uint at = pc.base + b * pc.batch_stride + row * pc.row_stride + h * 2u * pc.half_dim + j;
    const float v1 = float(x[at]), v2 = float(x[at + pc.half_dim]);
    x[at] = store_t(v1 * cs.x - v2 * cs.y);
    x[at + pc.half_dim] = store_t(v2 * cs.x + v1 * cs.y);
  }
}
