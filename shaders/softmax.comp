#version 450
// y = softmax(scale * x + mask) over each row; one workgroup per row, three passes
// (max, sum of exponentials, write) so rows of any length fit.
#extension GL_GOOGLE_include_directive : require
#include "types.glsl"

#ifndef WG_SIZE
#define WG_SIZE 256  // a power of two
#endif
layout(local_size_x = WG_SIZE) in;
#include "reduce.glsl"

layout(std430, set = 0, binding = 0) readonly buffer X { store_t x[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Y { store_t y[]; };
layout(std430, set = 0, binding = 2) readonly buffer Mask { store_t mask[]; };  // unused without FLAG_MASK

const uint FLAG_MASK = 1u, FLAG_CAUSAL = 2u;
layout(push_constant) uniform Push {
  uint rows, cols;
  float scale;
  uint mask_rows, mask_row_div;
  uint causal_rows, causal_offset;
  uint flags;
} pc;

float logit(uint row, uint mrow, uint c) {
  if ((pc.flags & FLAG_CAUSAL) != 0u && c > (row % pc.causal_rows) + pc.causal_offset) return NEG_INF;
  float v = pc.scale * float(x[row * pc.cols + c]);
  if ((pc.flags & FLAG_MASK) != 0u) v += float(mask[mrow * pc.cols + c]);
  return v;
}

void main() {
  const uint row = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
  if (row >= pc.rows) return;  // uniform across the workgroup
  const uint tid = gl_LocalInvocationID.x;
  const uint mrow = (row / pc.mask_row_div) % pc.mask_rows;

  float m = NEG_INF;
  for (uint c = tid; c < pc.cols; c += WG_SIZE) m = max(m, logit(row, mrow, c));
  m = workgroup_max(m);
  if (m == NEG_INF) {
    // Every entry masked: 0/0, which torch.softmax also returns (NaN).
    for (uint c = tid; c < pc.cols; c += WG_SIZE) y[row * pc.cols + c] = store_t(QUIET_NAN);
    return;
  }
  float s = 0.0;
  for (uint c = tid; c < pc.cols; c += WG_SIZE) s += exp(logit(row, mrow, c) - m);
  s = workgroup_sum(s);
  const float inv = 1.0 / s;
  for (uint c = tid; c < pc.cols; c += WG_SIZE) y[row * pc.cols + c] = store_t(exp(logit(row, mrow, c) - m) * inv);
}
