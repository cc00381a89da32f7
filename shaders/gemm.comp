#version 450
// C = act(alpha * op(A) * op(B) + bias) + residual, row-major, batched.
//
// Each workgroup computes a BM x BN tile of C; each invocation a TM x TN register tile
// whose rows and columns are strided by BM/TM and BN/TN, so neighbouring invocations
// touch neighbouring elements. A and B stream through shared memory BK columns at a
// time. Tile sizes are specialization constants chosen per device (lib/ops/gemm.cpp).
//
// Variant defines: VKF_FP16_STORAGE. Everything else is a push-constant flag.
#extension GL_GOOGLE_include_directive : require
#include "types.glsl"
#include "activations.glsl"
#include "gemm_common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint BM = 64;
layout(constant_id = 2) const uint BN = 64;
layout(constant_id = 3) const uint BK = 16;
layout(constant_id = 4) const uint TM = 4;
layout(constant_id = 5) const uint TN = 4;

const uint RT = BM / TM;  // invocations along a tile's rows
const uint CT = BN / TN;  // and along its columns
const uint WG = RT * CT;

shared float As[BK * BM];  // k-major: As[k * BM + m]
shared float Bs[BK * BN];  // k-major: Bs[k * BN + n]

void main() {
  const uint tid = gl_LocalInvocationID.x;
  const uint tr = tid / CT, tc = tid % CT;
  const uint m0 = gl_WorkGroupID.y * BM, n0 = gl_WorkGroupID.x * BN;
  const uint z = gl_WorkGroupID.z;
  const uint a_off = batch_offset(z, pc.stride_a);
  const uint b_off = batch_offset(z, pc.stride_b);

  float acc[TM * TN];
  for (uint i = 0; i < TM * TN; ++i) acc[i] = 0.0;

  // Tile loads walk memory in its contiguous order (which depends on the transpose).
  const bool a_m_fast = flag(FLAG_TRANS_A), b_n_fast = !flag(FLAG_TRANS_B);
  for (uint k0 = 0; k0 < pc.K; k0 += BK) {
    for (uint i = tid; i < BM * BK; i += WG) {
      uint m = a_m_fast ? i % BM : i / BK, k = a_m_fast ? i / BM : i % BK;
      uint gm = m0 + m, gk = k0 + k;
      As[k * BM + m] = (gm < pc.M && gk < pc.K) ? a_at(a_off, gm, gk) : 0.0;
    }
    for (uint i = tid; i < BN * BK; i += WG) {
      uint n = b_n_fast ? i % BN : i / BK, k = b_n_fast ? i / BN : i % BK;
      uint gn = n0 + n, gk = k0 + k;
      Bs[k * BN + n] = (gn < pc.N && gk < pc.K) ? b_at(b_off, gk, gn) : 0.0;
    }
    barrier();
    for (uint k = 0; k < BK; ++k) {
      float a[TM], b[TN];
      for (uint i = 0; i < TM; ++i) a[i] = As[k * BM + tr + i * RT];
      for (uint j = 0; j < TN; ++j) b[j] = Bs[k * BN + tc + j * CT];
      for (uint i = 0; i < TM; ++i)
        for (uint j = 0; j < TN; ++j) acc[i * TN + j] = fma(a[i], b[j], acc[i * TN + j]);
    }
    barrier();
  }

  for (uint i = 0; i < TM; ++i) {
    uint m = m0 + tr + i * RT;
    if (m >= pc.M) continue;
    for (uint j = 0; j < TN; ++j) {
      uint n = n0 + tc + j * CT;
      if (n < pc.N) store_c(z, m, n, acc[i * TN + j]);
    }
  }
}
