#version 450
// Index of each row's largest value, the first on ties, NaN counting as largest (as
// torch.argmax does); one workgroup per row: one subgroup on CPU drivers
// (SUBGROUP_REDUCE, host: lib/ops/argmax.cpp), where each barrier of a shared-memory
// tree switches coroutines (docs/performance.md: the decode step's argmax). With
// flag_non_finite a row whose largest value is NaN or infinite gets its index with bit
// 31 set (decoding: overflowed logits must end the run with an error, never pass as a
// token).
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#ifdef SUBGROUP_REDUCE
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif
#include "types.glsl"
#include "rank.glsl"

#ifndef WG_SIZE
#define WG_SIZE 256
#endif
layout(local_size_x = WG_SIZE) in;
#ifdef X_UNITS
// Rows of whole 16-byte units (host: cols a multiple of 8 halves or 4 floats): a lane
// loads a unit at a time, where each lane's load of one element is a loop over lanes on
// llvmpipe.
layout(std430, set = 0, binding = 0) readonly buffer X { uvec4 xu[]; };
#ifdef VKF_FP16_STORAGE
#define UNIT_VALUES 8u
#else
#define UNIT_VALUES 4u
#endif
#else
layout(std430, set = 0, binding = 0) readonly buffer X { store_t x[]; };
#endif
layout(std430, set = 0, binding = 1) writeonly buffer I { uint indices[]; };
layout(push_constant) uniform Push { uint rows, cols, flag_non_finite; } pc;

// By its bits (exponent all ones): compilers may fold isnan and isinf to false.
bool not_finite(float v) { return (floatBitsToUint(v) & 0x7f800000u) == 0x7f800000u; }

#ifdef SUBGROUP_REDUCE
// A value's place in ranks_before's order as an unsigned key: NaN above everything, -0
// equal to +0 (so their tie goes to the lower index), every other float by value.
uint rank_key(float v) {
  if ((floatBitsToUint(v) & 0x7fffffffu) > 0x7f800000u) return 0xffffffffu;  // NaN
  const uint bits = floatBitsToUint(v == 0.0 ? 0.0 : v);
  return (bits & 0x80000000u) != 0u ? ~bits : bits | 0x80000000u;
}
#else
shared float best_v[WG_SIZE];
shared uint best_i[WG_SIZE];
#endif

void main() {
  const uint row = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
  if (row >= pc.rows) return;
  const uint tid = gl_LocalInvocationID.x;
  float v = 0.0;
  uint idx = NO_INDEX;
#ifdef X_UNITS
  const uint units = pc.cols / UNIT_VALUES;
  for (uint u = tid; u < units; u += WG_SIZE) {
    const uvec4 w = xu[row * units + u];
    float vals[UNIT_VALUES];
#ifdef VKF_FP16_STORAGE
    [[unroll]] for (uint k = 0u; k < 4u; ++k) {
      const vec2 h = unpackHalf2x16(w[k]);
      vals[2u * k] = h.x, vals[2u * k + 1u] = h.y;
    }
#else
    [[unroll]] for (uint k = 0u; k < 4u; ++k) vals[k] = uintBitsToFloat(w[k]);
#endif
    [[unroll]] for (uint k = 0u; k < UNIT_VALUES; ++k) {
      const uint c = u * UNIT_VALUES + k;
      if (ranks_before(vals[k], c, v, idx)) {
        v = vals[k];
        idx = c;
      }
    }
  }
#else
  for (uint c = tid; c < pc.cols; c += WG_SIZE) {
    float xv = float(x[row * pc.cols + c]);
    if (ranks_before(xv, c, v, idx)) {
      v = xv;
      idx = c;
    }
  }
#endif
#ifdef SUBGROUP_REDUCE
  // The largest key among the lanes, then the lowest index holding it (a lane without
  // an element has key 0, below -inf's, and no index).
  const uint key = idx == NO_INDEX ? 0u : rank_key(v);
  const uint best_key = subgroupMax(key);
  const uint best = subgroupMin(key == best_key ? idx : NO_INDEX);
  // Key of NaN and +inf and up, or -inf's (every element -inf): the best is not finite.
  const bool bad = pc.flag_non_finite != 0u && (best_key >= 0xff800000u || best_key == 0x007fffffu);
  if (tid == 0) indices[row] = best | (bad ? 0x80000000u : 0u);
#else
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
    const bool bad = pc.flag_non_finite != 0u && not_finite(best_v[0]);
    indices[row] = best_i[0] | (bad ? 0x80000000u : 0u);
  }
#endif
}
