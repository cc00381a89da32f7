#version 450
// The decode-step GEMM: M is 1 to MAX_M rows, N and K large; every weight element is
// read once, so this kernel is about memory, not arithmetic.
//
// op(B) = B^T (Linear weights, [N, K]):
//   SUBGROUP_REDUCE: each subgroup owns COLS output columns, its lanes split K and sum
//     with subgroupAdd: no shared memory, no barriers (lavapipe pays a coroutine switch
//     per SIMD chunk at every barrier). With VEC4_K the loads are vec4 along K.
//   otherwise: LANES invocations per column reduce through shared memory.
// op(B) = B ([K, N]): each invocation owns one column and walks K (coalesced rows).
#extension GL_GOOGLE_include_directive : require
#include "types.glsl"
#include "activations.glsl"

// NORM_FOLDED (host: a product with Gemm::norm_of): FLAG_NORM_A / FLAG_NORM_R and the
// norm's weights at bindings 7 and 8. A variant of its own, so the products without a
// norm keep the plain loop (lavapipe measured the norm's branches in it).
#ifdef NORM_FOLDED
#define GEMM_NORM
#endif
#ifdef VEC4_K
#ifdef TEXEL_B
// TEXEL_B (host: CPU drivers, A and B aligned to whole texels): A and B read as storage
// texel buffers, 16 bytes a texel: 4 fp32 values, or 8 fp16 ones as 4 uints. llvmpipe
// loads a texel per invocation as one vector load; a storage buffer's per-invocation
// loads in a loop become scalar gathers, branchy ones on CPUs without fast gathers
// (AMD EPYC, Mesa 25.0.7: 1x1536x576 fp32 at 3.8 GB/s from buffers, 9-10 from texels).
// ADDRESS_AB (host: CPU drivers with hardware gathers): the same 16-byte units read
// through A's and B's buffer addresses instead. llvmpipe makes each a hardware gather
// with no bounds check (Xeon with AVX-512, Mesa 25.0.7: vpgatherqd), where a texel load
// is an indirect call; the host checks every index stays inside the views it binds.
#ifdef VKF_FP16_STORAGE
#define TEXEL_VEC4S 2u  // vec4s per texel
#define texel_t uvec4
vec4 texel_vec4(uvec4 t, uint p) { return p == 0u ? vec4(unpackHalf2x16(t.x), unpackHalf2x16(t.y))
                                                  : vec4(unpackHalf2x16(t.z), unpackHalf2x16(t.w)); }
#else
#define TEXEL_VEC4S 1u
#define texel_t vec4
vec4 texel_vec4(vec4 t, uint p) { return t; }
#endif
#ifdef ADDRESS_AB
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_buffer_reference_uvec2 : require
// Each unit loaded as two 64-bit words: llvmpipe gathers a vector load per component, so
// 64-bit components take half the gather instructions of 32-bit ones for the same bytes
// (the host asks for shaderInt64 with the address path).
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
layout(buffer_reference, std430, buffer_reference_align = 16) readonly buffer Units { u64vec2 units[]; };
uvec4 words(u64vec2 w) { return uvec4(unpackUint2x32(w.x), unpackUint2x32(w.y)); }
#ifdef VKF_FP16_STORAGE
#define A_UNIT(i) words(Units(pc.address_a).units[i])
#define B_UNIT(i) words(Units(pc.address_b).units[i])
#else
#define A_UNIT(i) uintBitsToFloat(words(Units(pc.address_a).units[i]))
#define B_UNIT(i) uintBitsToFloat(words(Units(pc.address_b).units[i]))
#endif
#elif defined(VKF_FP16_STORAGE)
layout(set = 0, binding = 0, rgba32ui) uniform restrict readonly uimageBuffer A_texels;
#ifndef QTYPE  // (blocks.glsl reads a weight in blocks)
layout(set = 0, binding = 1, rgba32ui) uniform restrict readonly uimageBuffer B_texels;
#endif
#else
layout(set = 0, binding = 0, rgba32f) uniform restrict readonly imageBuffer A_texels;
#ifndef QTYPE
layout(set = 0, binding = 1, rgba32f) uniform restrict readonly imageBuffer B_texels;
#endif
#endif
#ifndef ADDRESS_AB
#define A_UNIT(i) imageLoad(A_texels, int(i))
#define B_UNIT(i) imageLoad(B_texels, int(i))
#endif
#else
layout(std430, set = 0, binding = 0) readonly buffer BufA4 { store_vec4 A4[]; };
#ifndef QTYPE
layout(std430, set = 0, binding = 1) readonly buffer BufB4 { store_vec4 B4[]; };
#endif
vec4 a_vec4(uint i4) { return vec4(A4[i4]); }
#endif
#ifdef NORM_FOLDED
// The folded norm's gamma and beta as vectors along K too (the host binds them at offset 0).
layout(std430, set = 0, binding = 7) readonly buffer NormGamma4 { store_vec4 norm_gamma4[]; };
layout(std430, set = 0, binding = 8) readonly buffer NormBeta4 { store_vec4 norm_beta4[]; };
#endif
#define GEMM_SKIP_AB
#endif
// QTYPE (host: Gemm::b_blocks, a Linear weight in llama.cpp's blocks): B through
// blocks.glsl, each block's codes and scale loaded once and dequantized in registers.
#ifdef QTYPE
#define GEMM_SKIP_B
#endif
#include "gemm_common.glsl"
#ifdef QTYPE
#include "blocks.glsl"
#endif
#if defined(VEC4_K) && defined(TEXEL_B)
// vec4 i4 of A (element 4 * i4 on); after the push constants, which hold ADDRESS_AB's addresses.
vec4 a_vec4(uint i4) { return texel_vec4(A_UNIT(i4 / TEXEL_VEC4S), i4 % TEXEL_VEC4S); }
#endif

#define MAX_M GEMM_SMALL_M_MAX_M  // gemm_flags.h, shared with the host
// ROWS (host: the product's M, 1 to MAX_M): the loops below run exactly M rows, so a
// batch-1 decode step neither loads nor multiplies the three rows it does not have
// (on lavapipe the loads are gathers even when masked off).
#ifdef ROWS
#define ROW_USED(m) ((m) < ROWS)
#else
#define ROW_USED(m) ((m) < pc.M)
#endif
#ifndef WG_SIZE
#define WG_SIZE 256
#endif
#ifndef LANES
#define LANES 32  // invocations per output column (a power of two; the subgroup size with SUBGROUP_REDUCE)
#endif
#ifndef COLS
#define COLS 4  // output columns per subgroup (SUBGROUP_REDUCE)
#endif
layout(local_size_x = WG_SIZE) in;

#ifdef SUBGROUP_REDUCE
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif
#ifndef SUBGROUP_REDUCE
shared float partial[WG_SIZE];
#endif

#ifdef NORM_FOLDED
#include "gemm_small_m_norm.glsl"  // the folded norm's row statistics, once per workgroup
#endif

#ifndef VEC4_K
// Element (m, k) of A as the product reads it: normalised when the norm is folded in.
float a_read(uint a_off, uint m, uint k) {
  const float v = a_at(a_off, m, k);
#ifdef NORM_FOLDED
  if (flag(FLAG_NORM_A)) return normalized(v, m, k);
#endif
  return v;
}
#endif

#ifdef SUBGROUP_REDUCE

#ifdef NORM_OUT
// NORM_OUT (host: Ops::gemm_normed, a post-norm sublayer's last product): besides C,
// y = LN(C) row by row (RMSNorm with FLAG_NORM_RMS, eps pc.norm_eps) to C2 [M, N]
// (ldc2, base_c2), so that no layer_norm dispatch follows (on lavapipe each costs tens
// of microseconds of thread hand-over, more than its work). Every subgroup takes a
// ticket after its stores; the last to arrive reads the rows back and normalises them,
// then resets the ticket for the next dispatch. Subgroups, not workgroups: no barrier()
// (on lavapipe a barrier turns every workgroup's invocations into coroutines that
// switch at it; with one the normed products ran ~15% slower). No subgroup waits for
// another (Vulkan promises no forward progress between them), as in decode_attention.comp.
layout(std430, set = 0, binding = 7) readonly buffer OutGamma { store_t out_gamma[]; };
layout(std430, set = 0, binding = 8) readonly buffer OutBeta { store_t out_beta[]; };  // unread by an RMSNorm
layout(std430, set = 0, binding = 9) coherent buffer Tickets { uint tickets[]; };

void normalize_rows_if_last() {
  const uint lane = gl_SubgroupInvocationID, SG = gl_SubgroupSize;
  memoryBarrierBuffer();  // this invocation's stores of C, before the ticket
  uint ticket = 0u;
  if (lane == 0u) {
    const uint subgroups = gl_NumWorkGroups.x * gl_NumWorkGroups.y * gl_NumWorkGroups.z * gl_NumSubgroups;
    ticket = atomicAdd(tickets[0], 1u) + 1u;
    if (ticket == subgroups) atomicExchange(tickets[0], 0u);  // ready for the next dispatch
    ticket = subgroups - ticket;  // 0 in the last
  }
  if (subgroupAdd(ticket) != 0u) return;  // (the other lanes' are 0)
  // Every lane of the last subgroup reads what the others stored: lane 0's ticket,
  // then a barrier over the subgroup's buffer accesses and this lane's own.
  subgroupMemoryBarrierBuffer();
  memoryBarrierBuffer();
  const bool rms = flag(FLAG_NORM_RMS);
  for (uint m = 0; m < pc.M; ++m) {
    // Two passes over the row as stored (E[x^2] - mean^2 would cancel when |mean| >> std).
    const uint row = pc.base_c + m * pc.ldc;
    float sum = 0.0;
    if (!rms)
      for (uint n = lane; n < pc.N; n += SG) sum += float(C[row + n]);
    const float mean = subgroupAdd(sum) / float(pc.N);  // 0 for an RMSNorm, which does not centre
    float m2 = 0.0;
    for (uint n = lane; n < pc.N; n += SG) {
      const float d = float(C[row + n]) - mean;
      m2 += d * d;
    }
    const float rstd = inversesqrt(subgroupAdd(m2) / float(pc.N) + pc.norm_eps);
    for (uint n = lane; n < pc.N; n += SG) {
      const float y = (float(C[row + n]) - mean) * rstd * float(out_gamma[n]);
      C2[pc.base_c2 + m * pc.ldc2 + n] = store_t(rms ? y : y + float(out_beta[n]));
    }
  }
}
#endif

void main() {
  const uint z = gl_WorkGroupID.z;
  const uint a_off = offset_a(z), b_off = offset_b(z);
  const uint lane = gl_SubgroupInvocationID;
  // FLAG_GLU: the subgroup's COLS columns are COLS / 2 outputs' gates, then their ups.
  const bool glu = flag(FLAG_GLU);
  const uint n0 = (gl_WorkGroupID.x * gl_NumSubgroups + gl_SubgroupID) * (glu ? COLS / 2u : COLS);  // first output
#ifdef NORM_FOLDED
  if (flag(FLAG_NORM_A | FLAG_NORM_R)) norm_statistics(z);
#endif
  uint cols[COLS];  // clamped: loads stay in bounds
  UNROLL for (uint c = 0; c < COLS; ++c)
    cols[c] = !glu ? min(n0 + c, pc.N - 1) : c < COLS / 2u ? min(n0 + c, pc.N - 1) : min(n0 + c - COLS / 2u, pc.N - 1) + pc.N;
  float acc[MAX_M * COLS];
  UNROLL for (uint i = 0; i < MAX_M * COLS; ++i) acc[i] = 0.0;
#if defined(QTYPE)
  // A block (32 values of K) a lane at a time: A's 8 vec4s of it for every row, then
  // each column's codes and scale, d * dot(a, codes) (+ m * sum(a)).
  const uint nb = pc.K / 32u, lda4 = pc.lda / 4u, blocks = (glu ? 2u * pc.N : pc.N) * nb;
  for (uint b = lane; b < nb; b += gl_SubgroupSize) {
    vec4 a[MAX_M * 8];
#ifdef TEXEL_B
    // A's block in 8 / TEXEL_VEC4S texels, each loaded once (an fp16 texel holds two vec4s).
    UNROLL for (uint m = 0; m < MAX_M; ++m)
      UNROLL for (uint u = 0; u < 8u / TEXEL_VEC4S; ++u) {
        const texel_t t = ROW_USED(m) ? A_UNIT((a_off / 4u + m * lda4 + b * 8u) / TEXEL_VEC4S + u) : texel_t(0);
        UNROLL for (uint p = 0; p < TEXEL_VEC4S; ++p) a[m * 8u + u * TEXEL_VEC4S + p] = texel_vec4(t, p);
      }
#else
    UNROLL for (uint m = 0; m < MAX_M; ++m)
      UNROLL for (uint i = 0; i < 8u; ++i) a[m * 8u + i] = ROW_USED(m) ? a_vec4(a_off / 4u + m * lda4 + b * 8u + i) : vec4(0.0);
#endif
    UNROLL for (uint i = 0; i < 8u; ++i) {
#ifdef NORM_FOLDED
      if (flag(FLAG_NORM_A)) {
        const vec4 g = vec4(norm_gamma4[b * 8u + i]), be = vec4(norm_beta4[b * 8u + i]);
        UNROLL for (uint m = 0; m < MAX_M; ++m)
          if (ROW_USED(m)) a[m * 8u + i] = (a[m * 8u + i] - norm_mean[m]) * norm_rstd[m] * g + be;
      }
#endif
    }
#ifdef Q_MIN
    vec2 a_sum[MAX_M];  // of values 0-15 and 16-31
    UNROLL for (uint m = 0; m < MAX_M; ++m) {
      const vec4 lo = a[m * 8u] + a[m * 8u + 1u] + a[m * 8u + 2u] + a[m * 8u + 3u];
      const vec4 hi = a[m * 8u + 4u] + a[m * 8u + 5u] + a[m * 8u + 6u] + a[m * 8u + 7u];
      a_sum[m] = vec2(lo.x + lo.y + lo.z + lo.w, hi.x + hi.y + hi.z + hi.w);
    }
#endif
    UNROLL for (uint c = 0; c < COLS; ++c) {
      const BlockRef r = block_ref(cols[c], b, glu ? 2u * pc.N : pc.N, nb);
      vec4 q[8];
      block_codes(r, q);
      const vec4 sc = block_scales(r);  // (d, m) of values 0-15, of 16-31
      UNROLL for (uint m = 0; m < MAX_M; ++m)
        if (ROW_USED(m)) {
          float lo = 0.0, hi = 0.0;
          UNROLL for (uint i = 0; i < 4u; ++i) lo += dot(a[m * 8u + i], q[i]);
          UNROLL for (uint i = 4; i < 8u; ++i) hi += dot(a[m * 8u + i], q[i]);
#ifdef Q_MIN
          acc[m * COLS + c] += sc.x * lo + sc.z * hi + sc.y * a_sum[m].x + sc.w * a_sum[m].y;
#else
          acc[m * COLS + c] += sc.x * lo + sc.z * hi;
#endif
        }
    }
  }
#elif defined(VEC4_K) && defined(TEXEL_B)
  // The same loop over texels of TEXEL_VEC4S vec4s.
  const uint KT = pc.K / (4u * TEXEL_VEC4S), lda4 = pc.lda / 4, ldbt = pc.ldb / (4u * TEXEL_VEC4S);
  const uint b_t = b_off / (4u * TEXEL_VEC4S);
  for (uint k = lane; k < KT; k += gl_SubgroupSize) {
    vec4 a[MAX_M * TEXEL_VEC4S];
    texel_t at[MAX_M];
    UNROLL for (uint m = 0; m < MAX_M; ++m)
      if (ROW_USED(m)) at[m] = A_UNIT((a_off / 4 + m * lda4) / TEXEL_VEC4S + k);
    UNROLL for (uint p = 0; p < TEXEL_VEC4S; ++p) {
      const uint k4 = k * TEXEL_VEC4S + p;
      UNROLL for (uint m = 0; m < MAX_M; ++m) a[m * TEXEL_VEC4S + p] = ROW_USED(m) ? texel_vec4(at[m], p) : vec4(0.0);
#ifdef NORM_FOLDED
      if (flag(FLAG_NORM_A)) {
        const vec4 g = vec4(norm_gamma4[k4]), be = vec4(norm_beta4[k4]);
        UNROLL for (uint m = 0; m < MAX_M; ++m)
          if (ROW_USED(m)) a[m * TEXEL_VEC4S + p] = (a[m * TEXEL_VEC4S + p] - norm_mean[m]) * norm_rstd[m] * g + be;
      }
#endif
    }
    UNROLL for (uint c = 0; c < COLS; ++c) {
      const texel_t t = B_UNIT(b_t + cols[c] * ldbt + k);
      UNROLL for (uint p = 0; p < TEXEL_VEC4S; ++p) {
        const vec4 b = texel_vec4(t, p);
        UNROLL for (uint m = 0; m < MAX_M; ++m)
          if (ROW_USED(m)) acc[m * COLS + c] += dot(a[m * TEXEL_VEC4S + p], b);
      }
    }
  }
#elif defined(VEC4_K)
  const uint K4 = pc.K / 4, lda4 = pc.lda / 4, ldb4 = pc.ldb / 4;
  for (uint k = lane; k < K4; k += gl_SubgroupSize) {
    vec4 a[MAX_M];
    UNROLL for (uint m = 0; m < MAX_M; ++m) a[m] = ROW_USED(m) ? a_vec4(a_off / 4 + m * lda4 + k) : vec4(0.0);
#ifdef NORM_FOLDED
    if (flag(FLAG_NORM_A)) {
      const vec4 g = vec4(norm_gamma4[k]), be = vec4(norm_beta4[k]);
      UNROLL for (uint m = 0; m < MAX_M; ++m)
        if (ROW_USED(m)) a[m] = (a[m] - norm_mean[m]) * norm_rstd[m] * g + be;
    }
#endif
    UNROLL for (uint c = 0; c < COLS; ++c) {
      vec4 b = vec4(B4[b_off / 4 + cols[c] * ldb4 + k]);
      UNROLL for (uint m = 0; m < MAX_M; ++m)
        if (ROW_USED(m)) acc[m * COLS + c] += dot(a[m], b);
    }
  }
#else
  for (uint k = lane; k < pc.K; k += gl_SubgroupSize) {
    float a[MAX_M];
    UNROLL for (uint m = 0; m < MAX_M; ++m) a[m] = ROW_USED(m) ? a_read(a_off, m, k) : 0.0;
    UNROLL for (uint c = 0; c < COLS; ++c) {
      float b = float(B[b_off + cols[c] * pc.ldb + k]);
      UNROLL for (uint m = 0; m < MAX_M; ++m)
        if (ROW_USED(m)) acc[m * COLS + c] = fma(a[m], b, acc[m * COLS + c]);
    }
  }
#endif
  // Column c's sum goes to lane c (COLS is at most the subgroup size: host), and the
  // epilogue runs once for the subgroup's columns, a lane each. On lavapipe a store by
  // lane 0 is the whole subgroup's masked work: once per column, its bias, activation and
  // residual cost ~10% of a 1x2048x512 product.
  if (glu) {
    UNROLL for (uint m = 0; m < MAX_M; ++m)
      if (ROW_USED(m)) {
        float gate = 0.0, up = 0.0;
        UNROLL for (uint c = 0; c < COLS / 2u; ++c) {
          const float g = subgroupAdd(acc[m * COLS + c]), u = subgroupAdd(acc[m * COLS + c + COLS / 2u]);
          if (lane == c) gate = g, up = u;
        }
        if (lane < COLS / 2u && n0 + lane < pc.N) store_glu(z, m, n0 + lane, gate, up);
      }
    return;
  }
  UNROLL for (uint m = 0; m < MAX_M; ++m)
    if (ROW_USED(m)) {  // uniform: every lane reduces, or none
      float mine = 0.0;
      UNROLL for (uint c = 0; c < COLS; ++c) {
        const float s = subgroupAdd(acc[m * COLS + c]);
        if (lane == c) mine = s;
      }
      if (lane < COLS && n0 + lane < pc.N) store_c(z, m, n0 + lane, mine);
    }
#ifdef NORM_OUT
  normalize_rows_if_last();
#endif
}

#else

// Element k of B's row n (a Linear weight's), as stored or from its block.
#ifdef QTYPE
#define B_AT(n, k) block_value(n, k, (flag(FLAG_GLU) ? 2u * pc.N : pc.N) * (pc.K / 32u))
#else
#define B_AT(n, k) float(B[b_off + (n) * pc.ldb + (k)])
#endif

void main() {
  const uint tid = gl_LocalInvocationID.x;
  const uint z = gl_WorkGroupID.z;
  const uint a_off = offset_a(z);
  const uint b_off = offset_b(z);
#ifdef NORM_FOLDED
  if (flag(FLAG_NORM_A | FLAG_NORM_R)) norm_statistics(z);  // the whole workgroup, before any return
#endif
  float acc[MAX_M], acc_up[MAX_M];  // acc_up: FLAG_GLU's up sums, beside the gates in acc
  UNROLL for (uint m = 0; m < MAX_M; ++m) acc[m] = 0.0, acc_up[m] = 0.0;

  if (flag(FLAG_TRANS_B)) {
    const bool glu = flag(FLAG_GLU);
    const uint cols = WG_SIZE / LANES;
    const uint lane = tid % LANES, col = tid / LANES;
    const uint n = gl_WorkGroupID.x * cols + col;
    if (n < pc.N) {
      for (uint k = lane; k < pc.K; k += LANES) {
        const float b = B_AT(n, k);
        if (glu) {  // uniform
          const float b_up = B_AT(pc.N + n, k);
          UNROLL for (uint m = 0; m < MAX_M; ++m)
            if (m < pc.M) {
              const float a = a_read(a_off, m, k);
              acc[m] = fma(a, b, acc[m]);
              acc_up[m] = fma(a, b_up, acc_up[m]);
            }
          continue;
        }
        UNROLL for (uint m = 0; m < MAX_M; ++m)
          if (m < pc.M) acc[m] = fma(a_read(a_off, m, k), b, acc[m]);
      }
    }
    UNROLL for (uint m = 0; m < MAX_M; ++m) {
      partial[tid] = acc[m];
      barrier();
      for (uint s = LANES / 2; s > 0; s >>= 1) {
        if (lane < s) partial[tid] += partial[tid + s];
        barrier();
      }
      const float sum = partial[tid];
      barrier();
      if (glu) {  // uniform: the ups' sums the same way
        partial[tid] = acc_up[m];
        barrier();
        for (uint s = LANES / 2; s > 0; s >>= 1) {
          if (lane < s) partial[tid] += partial[tid + s];
          barrier();
        }
      }
      if (lane == 0 && n < pc.N && m < pc.M) {
        if (glu) store_glu(z, m, n, sum, partial[tid]);
        else store_c(z, m, n, sum);
      }
      barrier();
    }
  } else {
#ifndef QTYPE  // (a weight in blocks is always a Linear weight: host)
    const uint n = gl_WorkGroupID.x * WG_SIZE + tid;
    if (n >= pc.N) return;
    for (uint k = 0; k < pc.K; ++k) {
      float b = float(B[b_off + k * pc.ldb + n]);
      UNROLL for (uint m = 0; m < MAX_M; ++m)
        if (m < pc.M) acc[m] = fma(a_read(a_off, m, k), b, acc[m]);
    }
    UNROLL for (uint m = 0; m < MAX_M; ++m)
      if (m < pc.M) store_c(z, m, n, acc[m]);
#endif
  }
}
#endif
