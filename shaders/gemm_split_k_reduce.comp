#version 450
// Split-K's second pass (lib/ops/gemm.cpp): C = epilogue(sum over slices of the fp32
// partial products [batch][slice][M][N] the split GEMM wrote), the slices added in
// order (the same sum run after run), then alpha, bias, activation, residual, split
// output and decode-step rows applied once, by the same store_c as the one-pass kernels.
// One invocation per element of C; binding 7 holds the partials (bindings 0 and 1, A
// and B, are bound and never read).
#extension GL_GOOGLE_include_directive : require
#include "types.glsl"
#include "activations.glsl"
#define GEMM_SKIP_AB
#include "gemm_common.glsl"

#ifndef SLICES
#define SLICES 2  // host: GemmTiles::split_k (a default for compiling the file alone)
#endif
layout(std430, set = 0, binding = 7) readonly buffer Partials { float partials[]; };
layout(local_size_x = 64) in;

void main() {
  const uint n = gl_GlobalInvocationID.x, m = gl_WorkGroupID.y, z = gl_WorkGroupID.z;
  if (n >= pc.N) return;
  float sum = 0.0;
  for (uint s = 0; s < SLICES; ++s) sum += partials[((z * SLICES + s) * pc.M + m) * pc.N + n];
  store_c(z, m, n, sum);
}
