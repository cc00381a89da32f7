#version 450
// y = (v - mean) / sqrt(var + eps) * gamma + beta with v = x (+ r); one workgroup per
// row. The variance is taken around the mean in a second pass (not E[v^2] - mean^2,
// which cancels catastrophically when |mean| >> std). With FLAG_WRITE_SUM the sum
// v = x + r is also stored, for pre-norm blocks that keep the residual stream.
#extension GL_GOOGLE_include_directive : require
#include "types.glsl"

#ifndef WG_SIZE
#define WG_SIZE 256
#endif
layout(local_size_x = WG_SIZE) in;
#include "reduce.glsl"

layout(std430, set = 0, binding = 0) readonly buffer X { store_t x[]; };
layout(std430, set = 0, binding = 1) readonly buffer Gamma { store_t gamma[]; };
layout(std430, set = 0, binding = 2) readonly buffer Beta { store_t beta[]; };
layout(std430, set = 0, binding = 3) writeonly buffer Y { store_t y[]; };
layout(std430, set = 0, binding = 4) readonly buffer R { store_t r[]; };      // FLAG_RESIDUAL
layout(std430, set = 0, binding = 5) writeonly buffer S { store_t sum_out[]; };  // FLAG_WRITE_SUM

const uint FLAG_RESIDUAL = 1u, FLAG_WRITE_SUM = 2u;
layout(push_constant) uniform Push {
  uint rows, cols;
  float eps;
  uint flags;
} pc;

float value(uint i) {
  float v = float(x[i]);
  if ((pc.flags & FLAG_RESIDUAL) != 0u) v += float(r[i]);
  return v;
}

void main() {
  const uint row = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
  if (row >= pc.rows) return;
  const uint tid = gl_LocalInvocationID.x, base = row * pc.cols;

  float s = 0.0;
  for (uint c = tid; c < pc.cols; c += WG_SIZE) s += value(base + c);
  const float mean = workgroup_sum(s) / float(pc.cols);
  float q = 0.0;
  for (uint c = tid; c < pc.cols; c += WG_SIZE) {
    float d = value(base + c) - mean;
    q += d * d;
  }
  const float rstd = inversesqrt(workgroup_sum(q) / float(pc.cols) + pc.eps);
  for (uint c = tid; c < pc.cols; c += WG_SIZE) {
    float v = value(base + c);
    if ((pc.flags & FLAG_WRITE_SUM) != 0u) sum_out[base + c] = store_t(v);
    y[base + c] = store_t((v - mean) * rstd * float(gamma[c]) + float(beta[c]));
  }
}
