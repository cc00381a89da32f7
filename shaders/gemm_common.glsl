// Bindings, push constants and the epilogue shared by the GEMM kernels.
//
// Transposes, bias, residual and activation are push-constant flags, not #defines:
// every branch on them is uniform, and one pipeline per storage type (instead of 64)
// keeps first-run compile time low on drivers that compile slowly (lavapipe: ~4 s each).
#ifndef VKF_GEMM_COMMON_GLSL
#define VKF_GEMM_COMMON_GLSL

#ifndef GEMM_SKIP_AB  // kernels that read A and B as vectors declare them themselves
layout(std430, set = 0, binding = 0) readonly buffer BufA { store_t A[]; };
layout(std430, set = 0, binding = 1) readonly buffer BufB { store_t B[]; };
#endif
layout(std430, set = 0, binding = 2) writeonly buffer BufC { store_t C[]; };
layout(std430, set = 0, binding = 3) readonly buffer BufBias { store_t bias[]; };  // unused without FLAG_BIAS
layout(std430, set = 0, binding = 4) readonly buffer BufR { store_t R[]; };        // unused without FLAG_RESIDUAL
#define STEP_BINDING 5
#include "step.glsl"

const uint FLAG_TRANS_A = 1u, FLAG_TRANS_B = 2u, FLAG_BIAS = 4u, FLAG_RESIDUAL = 8u;
const uint ACT_SHIFT = 4u;  // 2 bits: 0 none, 1 ReLU, 2 GELU (erf), 3 GELU (tanh)

// Batches are two-level, (outer, inner) = (batch item, head), each operand with its
// own element strides, so per-head views of [B, L, H*d] tensors need no copies.
layout(push_constant) uniform Push {
  uint M, N, K;
  uint lda, ldb, ldc, ldr;
  uint inner;  // batches per outer step (heads); z = outer * inner + inner_index
  uvec2 stride_a, stride_b, stride_c, stride_r;  // (outer, inner) element strides
  float alpha;
  uint flags;
  uint base_a, base_b, base_c, base_r;  // element offsets into the bound views
  uint step_c;                          // C advances this many elements per decoding step
} pc;

bool flag(uint f) { return (pc.flags & f) != 0u; }

uint batch_offset(uint z, uvec2 stride) { return (z / pc.inner) * stride.x + (z % pc.inner) * stride.y; }
uint offset_a(uint z) { return pc.base_a + batch_offset(z, pc.stride_a); }
uint offset_b(uint z) { return pc.base_b + batch_offset(z, pc.stride_b); }

float activate_flagged(float v) {
  uint act = (pc.flags >> ACT_SHIFT) & 3u;
  if (act == 1u) return max(v, 0.0);
  if (act == 2u) return gelu_erf(v);
  if (act == 3u) return gelu_tanh(v);
  return v;
}

void store_c(uint z, uint m, uint n, float acc) {
  float v = pc.alpha * acc;
  if (flag(FLAG_BIAS)) v += float(bias[n]);
  v = activate_flagged(v);
  if (flag(FLAG_RESIDUAL)) v += float(R[pc.base_r + batch_offset(z, pc.stride_r) + m * pc.ldr + n]);
  const uint step_offset = pc.step_c != 0u ? step_counter[0] * pc.step_c : 0u;
  C[pc.base_c + step_offset + batch_offset(z, pc.stride_c) + m * pc.ldc + n] = store_t(v);
}

#ifndef GEMM_SKIP_AB
// Element (m, k) of op(A) and (k, n) of op(B).
float a_at(uint off, uint m, uint k) { return float(A[off + (flag(FLAG_TRANS_A) ? k * pc.lda + m : m * pc.lda + k)]); }
float b_at(uint off, uint k, uint n) { return float(B[off + (flag(FLAG_TRANS_B) ? n * pc.ldb + k : k * pc.ldb + n)]); }
#endif

#endif
