#version 450
// y = (v - mean) / sqrt(var + eps) * gamma + beta with v = x (+ r); one workgroup per
// row. The variance is taken around the mean in a second pass (not E[v^2] - mean^2,
// which cancels catastrophically when |mean| >> std). With FLAG_WRITE_SUM the sum
// v = x + r is also stored, for pre-norm blocks that keep the residual stream. With
// FLAG_NORM_IN, v = LN_in(x) first (another norm's gamma_in, beta_in, the same eps): a
// post-norm decoder's last layer norm and the final norm in one dispatch. With FLAG_RMS
// both are RMSNorms (Llama's kind): y = v / sqrt(mean(v^2) + eps) * gamma, no mean, no beta.
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
layout(std430, set = 0, binding = 6) readonly buffer GammaIn { store_t gamma_in[]; };  // FLAG_NORM_IN
layout(std430, set = 0, binding = 7) readonly buffer BetaIn { store_t beta_in[]; };    // FLAG_NORM_IN

const uint FLAG_RESIDUAL = 1u, FLAG_WRITE_SUM = 2u, FLAG_NORM_IN = 4u, FLAG_RMS = 8u;
layout(push_constant) uniform Push {
  uint rows, cols;
  float eps;
  uint flags;
} pc;

float raw(uint i) {
  float v = float(x[i]);
  if ((pc.flags & FLAG_RESIDUAL) != 0u) v += float(r[i]);
  return v;
}

float mean_in = 0.0, rstd_in = 0.0;  // FLAG_NORM_IN: the inner norm's statistics of this row
float value(uint i, uint c) {
  const float v = raw(i);
  if ((pc.flags & FLAG_NORM_IN) == 0u) return v;
  return (v - mean_in) * rstd_in * float(gamma_in[c]) + ((pc.flags & FLAG_RMS) != 0u ? 0.0 : float(beta_in[c]));
}

void main() {
  const uint row = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
  if (row >= pc.rows) return;
  const uint tid = gl_LocalInvocationID.x, base = row * pc.cols;

  const bool rms = (pc.flags & FLAG_RMS) != 0u;  // uniform: so are the barriers below
  if ((pc.flags & FLAG_NORM_IN) != 0u) {
    if (!rms) {
      float s0 = 0.0;
      for (uint c = tid; c < pc.cols; c += WG_SIZE) s0 += raw(base + c);
      mean_in = workgroup_sum(s0) / float(pc.cols);
    }
    float q0 = 0.0;
    for (uint c = tid; c < pc.cols; c += WG_SIZE) {
      float d = raw(base + c) - mean_in;
      q0 += d * d;
    }
    rstd_in = inversesqrt(workgroup_sum(q0) / float(pc.cols) + pc.eps);
  }
  float mean = 0.0;
  if (!rms) {
    float s = 0.0;
    for (uint c = tid; c < pc.cols; c += WG_SIZE) s += value(base + c, c);
    mean = workgroup_sum(s) / float(pc.cols);
  }
  float q = 0.0;
  for (uint c = tid; c < pc.cols; c += WG_SIZE) {
    float d = value(base + c, c) - mean;
    q += d * d;
  }
  const float rstd = inversesqrt(workgroup_sum(q) / float(pc.cols) + pc.eps);
  for (uint c = tid; c < pc.cols; c += WG_SIZE) {
    float v = value(base + c, c);
    if ((pc.flags & FLAG_WRITE_SUM) != 0u) sum_out[base + c] = store_t(v);
    y[base + c] = store_t((v - mean) * rstd * float(gamma[c]) + (rms ? 0.0 : float(beta[c])));
  }
}
