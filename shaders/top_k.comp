#version 450
// The k best entries of each row in order (see rank.glsl). Pass t finds the best entry
// ranked after pass t-1's pick: k passes over the row, no sorting network, any k.
// Built for sampling from a vocabulary (k up to a few hundred).
#extension GL_GOOGLE_include_directive : require
#include "types.glsl"
#include "rank.glsl"

#ifndef WG_SIZE
#define WG_SIZE 256
#endif
layout(local_size_x = WG_SIZE) in;
layout(std430, set = 0, binding = 0) readonly buffer X { store_t x[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Vals { store_t values[]; };
layout(std430, set = 0, binding = 2) writeonly buffer Idx { uint indices[]; };
layout(push_constant) uniform Push { uint rows, cols, k; } pc;

shared float best_v[WG_SIZE];
shared uint best_i[WG_SIZE];

void main() {
  const uint row = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
  if (row >= pc.rows) return;
  const uint tid = gl_LocalInvocationID.x;
  float prev_v = 0.0;
  uint prev_i = NO_INDEX;
  for (uint t = 0; t < pc.k; ++t) {
    float v = 0.0;
    uint idx = NO_INDEX;
    for (uint c = tid; c < pc.cols; c += WG_SIZE) {
      float xv = float(x[row * pc.cols + c]);
      bool after_prev = prev_i == NO_INDEX || ranks_before(prev_v, prev_i, xv, c);
      if (after_prev && ranks_before(xv, c, v, idx)) {
        v = xv;
        idx = c;
      }
    }
    best_v[tid] = v;
    best_i[tid] = idx;
    barrier();
    for (uint s = WG_SIZE / 2; s > 0; s >>= 1) {
      if (tid < s && ranks_before(best_v[tid + s], best_i[tid + s], best_v[tid], best_i[tid])) {
        best_v[tid] = best_v[tid + s];
        best_i[tid] = best_i[tid + s];
      }
      barrier();
    }
    prev_v = best_v[0];
    prev_i = best_i[0];
    if (tid == 0) {
      values[row * pc.k + t] = store_t(prev_v);
      indices[row * pc.k + t] = prev_i;
    }
    barrier();
  }
}
