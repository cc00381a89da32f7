#version 450
// The decode-step GEMM: M is 1 to MAX_M rows, N and K large; every weight element is
// read once. With op(B) = B^T (Linear weights, [N, K]) a group of LANES invocations
// splits one output column's K and reduces in shared memory; otherwise each invocation
// owns one column and walks K (rows of B are contiguous along N, so reads coalesce).
#extension GL_GOOGLE_include_directive : require
#include "types.glsl"
#include "activations.glsl"
#include "gemm_common.glsl"

#ifndef MAX_M
#define MAX_M 4
#endif
#ifndef WG_SIZE
#define WG_SIZE 256
#endif
#ifndef LANES
#define LANES 32  // invocations per output column with B^T; a power of two
#endif
layout(local_size_x = WG_SIZE) in;

shared float partial[WG_SIZE];

void main() {
  const uint tid = gl_LocalInvocationID.x;
  const uint z = gl_WorkGroupID.z;
  const uint a_off = offset_a(z);
  const uint b_off = offset_b(z);
  float acc[MAX_M];
  for (uint m = 0; m < MAX_M; ++m) acc[m] = 0.0;

  if (flag(FLAG_TRANS_B)) {
    const uint cols = WG_SIZE / LANES;
    const uint lane = tid % LANES, col = tid / LANES;
    const uint n = gl_WorkGroupID.x * cols + col;
    if (n < pc.N) {
      for (uint k = lane; k < pc.K; k += LANES) {
        float b = float(B[b_off + n * pc.ldb + k]);
        for (uint m = 0; m < MAX_M; ++m)
          if (m < pc.M) acc[m] = fma(a_at(a_off, m, k), b, acc[m]);
      }
    }
    for (uint m = 0; m < MAX_M; ++m) {
      partial[tid] = acc[m];
      barrier();
      for (uint s = LANES / 2; s > 0; s >>= 1) {
        if (lane < s) partial[tid] += partial[tid + s];
        barrier();
      }
      if (lane == 0 && n < pc.N && m < pc.M) store_c(z, m, n, partial[tid]);
      barrier();
    }
  } else {
    const uint n = gl_WorkGroupID.x * WG_SIZE + tid;
    if (n >= pc.N) return;
    for (uint k = 0; k < pc.K; ++k) {
      float b = float(B[b_off + k * pc.ldb + n]);
      for (uint m = 0; m < MAX_M; ++m)
        if (m < pc.M) acc[m] = fma(a_at(a_off, m, k), b, acc[m]);
    }
    for (uint m = 0; m < MAX_M; ++m)
      if (m < pc.M) store_c(z, m, n, acc[m]);
  }
}
