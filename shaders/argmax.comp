#version 450
// Index of each row's largest value, the first on ties, NaN counting as largest (as
// torch.argmax does); one workgroup per row. With flag_non_finite a row whose largest
// value is NaN or infinite gets its index with bit 31 set (decoding: overflowed logits
// must end the run with an error, never pass as a token).
#extension GL_GOOGLE_include_directive : require
#include "types.glsl"
#include "rank.glsl"

#ifndef WG_SIZE
#define WG_SIZE 256
#endif
layout(local_size_x = WG_SIZE) in;
layout(std430, set = 0, binding = 0) readonly buffer X { store_t x[]; };
layout(std430, set = 0, binding = 1) writeonly buffer I { uint indices[]; };
layout(push_constant) uniform Push { uint rows, cols, flag_non_finite; } pc;

shared float best_v[WG_SIZE];
shared uint best_i[WG_SIZE];

void main() {
  const uint row = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
  if (row >= pc.rows) return;
  const uint tid = gl_LocalInvocationID.x;
  float v = 0.0;
  uint idx = NO_INDEX;
  for (uint c = tid; c < pc.cols; c += WG_SIZE) {
    float xv = float(x[row * pc.cols + c]);
    if (ranks_before(xv, c, v, idx)) {
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
  if (tid == 0) {
    // By its bits (exponent all ones): compilers may fold isnan and isinf to false.
    const bool bad = pc.flag_non_finite != 0u && (floatBitsToUint(best_v[0]) & 0x7f800000u) == 0x7f800000u;
    indices[row] = best_i[0] | (bad ? 0x80000000u : 0u);
  }
}
