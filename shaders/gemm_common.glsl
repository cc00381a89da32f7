// Bindings, push constants and the epilogue shared by the GEMM kernels.
//
// Transposes, bias, residual and activation are push-constant flags, not #defines:
// every branch on them is uniform, and one pipeline per storage type (instead of 64)
// keeps first-run compile time low on drivers that compile slowly (lavapipe: ~4 s each).
#ifndef VKF_GEMM_COMMON_GLSL
#define VKF_GEMM_COMMON_GLSL

#ifndef GEMM_SKIP_AB  // kernels that read A and B as vectors declare them themselves
layout(std430, set = 0, binding = 0) readonly buffer BufA { store_t A[]; };
#ifndef GEMM_SKIP_B  // ... and B in blocks (blocks.glsl)
layout(std430, set = 0, binding = 1) readonly buffer BufB { store_t B[]; };
#endif
#endif
#ifdef SPLIT_K
// Split-K (host: GemmTiles::split_k > 1, SPLIT_K slices): the workgroups along z are
// (batch item, slice) pairs, slice s taking the s-th of SPLIT_K equal runs of whole BK
// steps of K (empty past its end); each writes its fp32 sums, unscaled, to partials
// [z][slice][M][N] at binding 2, and gemm_split_k_reduce.comp adds the slices in order
// and applies alpha, bias, activation, residual, split output and step rows once.
layout(std430, set = 0, binding = 2) writeonly buffer BufPartials { float partials[]; };
#elif defined(NORM_OUT)
// gemm_small_m.comp's NORM_OUT: the subgroup that finishes last reads C's rows back.
layout(std430, set = 0, binding = 2) coherent buffer BufC { store_t C[]; };
#else
layout(std430, set = 0, binding = 2) writeonly buffer BufC { store_t C[]; };
#endif
layout(std430, set = 0, binding = 3) readonly buffer BufBias { store_t bias[]; };  // unused without FLAG_BIAS
layout(std430, set = 0, binding = 4) readonly buffer BufR { store_t R[]; };        // unused without FLAG_RESIDUAL
#define STEP_BINDING 5
#include "step.glsl"
layout(std430, set = 0, binding = 6) writeonly buffer BufC2 { store_t C2[]; };     // unused without split_n

#include "gemm_flags.h"  // flag bits shared with lib/ops/gemm.cpp
const uint FLAG_TRANS_A = GEMM_FLAG_TRANS_A, FLAG_TRANS_B = GEMM_FLAG_TRANS_B;
const uint FLAG_BIAS = GEMM_FLAG_BIAS, FLAG_RESIDUAL = GEMM_FLAG_RESIDUAL, FLAG_STEP_ROWS = GEMM_FLAG_STEP_ROWS;
const uint FLAG_NORM_A = GEMM_FLAG_NORM_A, FLAG_NORM_R = GEMM_FLAG_NORM_R, FLAG_NORM_RMS = GEMM_FLAG_NORM_RMS;
const uint FLAG_STATS_IN = GEMM_FLAG_STATS_IN, FLAG_STATS_OUT = GEMM_FLAG_STATS_OUT, FLAG_GLU = GEMM_FLAG_GLU;
const uint FLAG_SPLIT_ITEMS = GEMM_FLAG_SPLIT_ITEMS;

#ifdef GEMM_NORM
// A folded LayerNorm's weights, and the statistics of the rows it normalises (each
// workgroup computes them for its own rows before the product: a few KB of reads).
layout(std430, set = 0, binding = 7) readonly buffer NormGamma { store_t norm_gamma[]; };
layout(std430, set = 0, binding = 8) readonly buffer NormBeta { store_t norm_beta[]; };
#if defined(NORM_ROWS)
// The tiled and direct kernels: statistics of the workgroup's NORM_ROWS rows, from
// norm_row0 on, shared by its invocations (gemm_norm_rows.glsl computes them).
shared float norm_mean[NORM_ROWS], norm_rstd[NORM_ROWS];
uint norm_row0 = 0u;
#elif defined(NORM_PRIVATE_ROWS)
// The direct kernel with subgroup arithmetic: every invocation holds the statistics of
// its workgroup's NORM_PRIVATE_ROWS rows, from norm_row0 on (no shared memory, no barrier).
float norm_mean[NORM_PRIVATE_ROWS], norm_rstd[NORM_PRIVATE_ROWS];
uint norm_row0 = 0u;
#else
// The decode-step kernel: every invocation holds the statistics of all M <= 4 rows.
float norm_mean[GEMM_SMALL_M_MAX_M], norm_rstd[GEMM_SMALL_M_MAX_M];
const uint norm_row0 = 0u;
#endif
// Element i of a row after the norm, r the row's place in the statistics (m - norm_row0
// for row m of the product; callers that know it as a loop constant pass it so, which
// keeps private statistics arrays in registers on CPU drivers).
float normalized_at(float v, uint r, uint i) {
  return (v - norm_mean[r]) * norm_rstd[r] * float(norm_gamma[i]) + float(norm_beta[i]);
}
float normalized(float v, uint m, uint i) { return normalized_at(v, m - norm_row0, i); }
#endif

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
  // Split output: columns [split_n, N) go to C2 (leading dimension ldc2, batch stride
  // stride_c2), e.g. a fused QKV projection's queries to scratch and its keys and
  // values to a cache. 0: no split.
  uint split_n, ldc2, stride_c2, base_c2;
  float norm_eps;  // FLAG_NORM_A / FLAG_NORM_R
  uint stats_parts;  // FLAG_STATS_IN: partials per row in the statistics read
  // ADDRESS_AB (gemm_small_m.comp): where A's and B's bound views start, their buffer
  // device addresses as uvec2s (GL_EXT_buffer_reference_uvec2).
  uvec2 address_a, address_b;
} pc;

bool flag(uint f) { return (pc.flags & f) != 0u; }

// A folded norm's scale from a row's mean and its sum of squared deviations m2 over
// `count` values: LayerNorm's 1 / sqrt(var + eps), or RMSNorm's 1 / sqrt(var + mean^2 +
// eps) (FLAG_NORM_RMS, whose mean the caller then takes as 0: norm_center).
float norm_scale(float mean, float m2, uint count) {
  const float var = m2 / float(count);
  return inversesqrt((flag(FLAG_NORM_RMS) ? var + mean * mean : var) + pc.norm_eps);
}
float norm_center(float mean) { return flag(FLAG_NORM_RMS) ? 0.0 : mean; }

// The batch item of this workgroup and the run of K it sums, [k_begin, k_end), in
// whole steps of bk (all of K without SPLIT_K).
#ifdef SPLIT_K
uint gemm_batch() { return gl_WorkGroupID.z / SPLIT_K; }
uint k_run(uint bk) { return ((pc.K + bk - 1u) / bk + SPLIT_K - 1u) / SPLIT_K * bk; }
uint k_begin(uint bk) { return (gl_WorkGroupID.z % SPLIT_K) * k_run(bk); }
uint k_end(uint bk) { return min(pc.K, k_begin(bk) + k_run(bk)); }
#else
uint gemm_batch() { return gl_WorkGroupID.z; }
uint k_begin(uint bk) { return 0u; }
uint k_end(uint bk) { return pc.K; }
#endif

uint batch_offset(uint z, uvec2 stride) { return (z / pc.inner) * stride.x + (z % pc.inner) * stride.y; }
uint offset_a(uint z) { return pc.base_a + batch_offset(z, pc.stride_a); }
uint offset_b(uint z) { return pc.base_b + batch_offset(z, pc.stride_b); }

float activate_flagged(float v) {
  uint act = (pc.flags >> GEMM_ACT_SHIFT) & GEMM_ACT_MASK;
  if (act == GEMM_ACT_RELU) return max(v, 0.0);
  if (act == GEMM_ACT_GELU) return gelu_erf(v);
  if (act == GEMM_ACT_GELU_TANH) return gelu_tanh(v);
  if (act == GEMM_ACT_SILU) return silu(v);
  if (act == GEMM_ACT_TANH) return tanh_precise(v);
  return v;
}

// v rounded to the storage type as a store rounds it (to nearest even: VKF_RTE_FP16, or
// an ulp apart where the device's conversion rounds otherwise). By arithmetic: drivers
// fold float(float16_t(v)) and unpackHalf2x16(packHalf2x16(v)) back to v (lavapipe
// does, `precise` or not).
float as_stored(float v) {
#ifdef VKF_FP16_STORAGE
  if (isnan(v) || abs(v) >= 65520.0) return v * 65536.0;  // past the largest half (65504 + half an ulp): inf
  int e;
  frexp(v, e);  // |v| = m 2^e, m in [0.5, 1): 11 significant bits are 2^(e - 11) apart
  const float step = exp2(float(max(e - 11, -24)));  // below 2^-14 halves are subnormal, 2^-24 apart
  return roundEven(v / step) * step;
#else
  return v;
#endif
}

#ifdef SPLIT_K
void store_c(uint z, uint m, uint n, float acc) { partials[(gl_WorkGroupID.z * pc.M + m) * pc.N + n] = acc; }
void store_glu(uint z, uint m, uint n, float gate, float up) {}  // never reached: the host does not split gated products
#else
// alpha * acc + bias[n]: the epilogue's input (bias[N + n] for a gated product's up).
float scaled_biased(float acc, uint n) { return flag(FLAG_BIAS) ? pc.alpha * acc + float(bias[n]) : pc.alpha * acc; }

// The rest of the epilogue for an activated value v: the residual (normalised when a
// norm of it is folded in), then the store. Returns the value stored, as a reader of C
// will see it (rounded to the storage type).
float store_value(uint z, uint m, uint n, float v, uint norm_r) {
  if (flag(FLAG_RESIDUAL)) {
    float r = float(R[pc.base_r + batch_offset(z, pc.stride_r) + m * pc.ldr + n]);
#ifdef GEMM_NORM
    if (flag(FLAG_NORM_R)) r = normalized_at(r, norm_r, n);  // post-norm: the residual is the previous sublayer's LN
#endif
    v += r;
  }
  // Decoding: row m of this step's product is row step + m of the output that is a
  // cache of positions (C2 when the output is split, else C).
  const uint step_row = flag(FLAG_STEP_ROWS) ? step_state[DECODE_STEP_WORD] + m : m;
  if (pc.split_n != 0u && n >= pc.split_n) {
    // GemmSplit::rows_are_items: row m is batch item m's row at the step (z is 0).
    const bool items = flag(FLAG_SPLIT_ITEMS);
    const uint item = items ? m : z, row2 = items ? step_row - m : step_row;
    C2[pc.base_c2 + item * pc.stride_c2 + row2 * pc.ldc2 + (n - pc.split_n)] = store_t(v);
    return as_stored(v);
  }
  const uint row = pc.split_n != 0u ? m : step_row;
  C[pc.base_c + batch_offset(z, pc.stride_c) + row * pc.ldc + n] = store_t(v);
  return as_stored(v);
}
// norm_r: row m's place in the folded norm's statistics (see normalized_at).
float store_c_at(uint z, uint m, uint n, float acc, uint norm_r) {
  return store_value(z, m, n, activate_flagged(scaled_biased(acc, n)), norm_r);
}
// FLAG_GLU: output n from its gate's sum and its up's, act(gate) * up.
float store_glu_at(uint z, uint m, uint n, float gate, float up, uint norm_r) {
  return store_value(z, m, n, activate_flagged(scaled_biased(gate, n)) * scaled_biased(up, pc.N + n), norm_r);
}
#ifdef GEMM_NORM
void store_c(uint z, uint m, uint n, float acc) { store_c_at(z, m, n, acc, m - norm_row0); }
void store_glu(uint z, uint m, uint n, float gate, float up) { store_glu_at(z, m, n, gate, up, m - norm_row0); }
#else
void store_c(uint z, uint m, uint n, float acc) { store_c_at(z, m, n, acc, 0u); }
void store_glu(uint z, uint m, uint n, float gate, float up) { store_glu_at(z, m, n, gate, up, 0u); }
#endif
#endif  // SPLIT_K

#ifndef GEMM_SKIP_AB
// Element (m, k) of op(A) and (k, n) of op(B).
float a_at(uint off, uint m, uint k) { return float(A[off + (flag(FLAG_TRANS_A) ? k * pc.lda + m : m * pc.lda + k)]); }
#ifndef GEMM_SKIP_B
float b_at(uint off, uint k, uint n) { return float(B[off + (flag(FLAG_TRANS_B) ? n * pc.ldb + k : k * pc.ldb + n)]); }
#endif
#endif

#endif
