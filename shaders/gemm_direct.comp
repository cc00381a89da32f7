#version 450
// C = act(alpha * op(A) * op(B) + bias) + residual, row-major, batched: the "direct"
// strategy, straight from global memory, for drivers that run invocations as SIMD lanes
// of a CPU (lavapipe).
//
// A workgroup owns TM rows of C and WG * TN columns; every invocation computes all TM
// rows of its TN columns (column n0 + lane + j * WG), straight from global memory: no
// shared memory and no barriers. On lavapipe (Mesa 25.0) every load whose address
// differs per lane, or is not provably constant, is a gather, and the tiled kernel
// (gemm.comp) pays one per shared-memory store and load on top of its global loads and
// a coroutine switch per SIMD chunk at each barrier. Here each lane gathers only what
// it alone needs: its B columns (each element then feeds TM FMAs) and, with SHUFFLE_A,
// one row of A per SG rows, which subgroupShuffle with a constant lane index hands to
// every lane (a register broadcast on a CPU). Without it every lane loads every row.
// Measured on lavapipe, 2 cores: 36 GFLOP/s at 256^3 where the best tiled tile gave 18.
// GPUs keep the tiled kernel (B's loads here are a row of B apart across lanes, so they
// do not coalesce); the tuner decides per device.
//
// Variants as in gemm.comp: VKF_FP16_STORAGE, and VEC4_NT when op(A) = A [M, K] and
// op(B) = B^T [N, K] with K, the leading dimensions and the offsets multiples of 4; with
// VEC4_NT, QTYPE: B in blocks (below).
// FLAG_GLU (gemm_flags.h, TN even): a workgroup owns WG * TN / 2 outputs, and an
// invocation's columns j < TN / 2 are its outputs' gates, j + TN / 2 the same outputs' ups.
#extension GL_GOOGLE_include_directive : require
#include "types.glsl"
#include "activations.glsl"

// NORM_FOLDED (host: a product with Gemm::norm_of): a LayerNorm of A's rows
// (FLAG_NORM_A) or of the residual's (FLAG_NORM_R) folded in, its weights at bindings 7
// and 8. The TM rows' statistics: with NORM_SUBGROUP (and NORM_PRIVATE_ROWS = TM) each
// subgroup computes them with subgroupAdd into registers, no barrier; otherwise the
// workgroup through shared memory (NORM_ROWS, gemm_norm_rows.glsl). On lavapipe a
// barrier anywhere in a kernel makes all of it a coroutine per SIMD chunk: the shared
// version ran this kernel's products 7-10x slower.
//
// ROW_STATS (with NORM_SUBGROUP and SHUFFLE_A): FLAG_STATS_OUT writes, for every row of C,
// each subgroup's partial statistics (count, mean, M2) of the values it stored, at
// binding 10; FLAG_STATS_IN takes a folded norm's row statistics from such partials of
// its rows (binding 9, stats_parts per row) instead of re-reading the rows: a consumer
// merges 16 partials per row of a 512-wide model where it read 1024 elements, and on
// lavapipe that re-reading by every subgroup was ~40% of the loads of an FFN-up product.
#ifdef NORM_FOLDED
#define GEMM_NORM
#endif
#ifdef ROW_STATS
#if !defined(NORM_FOLDED) || !defined(NORM_SUBGROUP) || !defined(SHUFFLE_A)
#error ROW_STATS needs NORM_FOLDED, NORM_SUBGROUP and SHUFFLE_A
#endif
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
layout(std430, set = 0, binding = 9) readonly buffer StatsIn { vec4 stats_in[]; };     // (count, mean, M2, 0)
layout(std430, set = 0, binding = 10) writeonly buffer StatsOut { vec4 stats_out[]; };
#endif
#ifdef NORM_SUBGROUP
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif
#ifdef VEC4_NT
#ifdef TEXEL_AB
// TEXEL_AB (host: CPU drivers, A and B starting on texel-aligned bytes): A and B read as
// storage texel buffers, 16 bytes a texel (4 fp32 values, or 8 fp16 ones as 4 uints),
// as the decode-step kernel reads them: llvmpipe loads a texel per lane as one vector,
// where a storage buffer's per-lane vec4 is a gather (branchy on CPUs without fast
// gathers). a4(i) and b4(i) are the i-th vec4 of A and B either way.
#ifdef VKF_FP16_STORAGE
layout(set = 0, binding = 0, rgba32ui) uniform restrict readonly uimageBuffer A_texels;
vec4 half_texel(uvec4 t, uint p) { return p == 0u ? vec4(unpackHalf2x16(t.x), unpackHalf2x16(t.y))
                                                   : vec4(unpackHalf2x16(t.z), unpackHalf2x16(t.w)); }
vec4 a4(uint i) { return half_texel(imageLoad(A_texels, int(i / 2u)), i % 2u); }
#ifndef QTYPE
layout(set = 0, binding = 1, rgba32ui) uniform restrict readonly uimageBuffer B_texels;
vec4 b4(uint i) { return half_texel(imageLoad(B_texels, int(i / 2u)), i % 2u); }
#endif
#else
layout(set = 0, binding = 0, rgba32f) uniform restrict readonly imageBuffer A_texels;
vec4 a4(uint i) { return imageLoad(A_texels, int(i)); }
#ifndef QTYPE
layout(set = 0, binding = 1, rgba32f) uniform restrict readonly imageBuffer B_texels;
vec4 b4(uint i) { return imageLoad(B_texels, int(i)); }
#endif
#endif
#ifdef QTYPE
#define TEXEL_B  // blocks.glsl: the blocks' 16-byte units as texels too
#endif
#else
layout(std430, set = 0, binding = 0) readonly buffer BufA4 { store_vec4 A4[]; };
vec4 a4(uint i) { return vec4(A4[i]); }
#ifndef QTYPE
layout(std430, set = 0, binding = 1) readonly buffer BufB4 { store_vec4 B4[]; };
vec4 b4(uint i) { return vec4(B4[i]); }
#endif
#endif

#ifdef NORM_FOLDED
layout(std430, set = 0, binding = 7) readonly buffer NormGamma4 { store_vec4 norm_gamma4[]; };
layout(std430, set = 0, binding = 8) readonly buffer NormBeta4 { store_vec4 norm_beta4[]; };
#endif
#define GEMM_SKIP_AB
#endif
#include "gemm_common.glsl"
#ifdef QTYPE
// QTYPE (host: Gemm::b_blocks, a prompt's product on CPU drivers): B, a Linear weight in
// llama.cpp's blocks (blocks.glsl): each of an invocation's columns' blocks loaded once
// into registers, a vec4 of it dequantized at each step of K and used for the TM rows,
// so that no dequantized copy of the weight is written and read back.
#include "blocks.glsl"
#endif

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint TM = 8;  // rows of C per workgroup (and per invocation)
layout(constant_id = 2) const uint TN = 1;  // columns per invocation
#ifdef SHUFFLE_A
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle : require
layout(constant_id = 3) const uint SG = 8;  // the subgroup size, which divides TM and WG
#endif

#ifdef NORM_FOLDED
float norm_source(uint z, uint m, uint i) {
  if (flag(FLAG_NORM_R)) return float(R[pc.base_r + batch_offset(z, pc.stride_r) + m * pc.ldr + i]);
#ifdef VEC4_NT
  const uint at = offset_a(z) + m * pc.lda + i;
  return a4(at / 4u)[at % 4u];
#else
  return a_at(offset_a(z), m, i);
#endif
}
#ifdef NORM_SUBGROUP
// Sum over a row of `count` elements at `row` (an element offset) of A or of the
// residual, each lane a share, and of squared deviations from `mean`: loops of a
// uniform trip count with clamped, always in-bounds loads (lavapipe runs a loop whose
// bound differs by lane under a mask, several times slower), vec4 loads along A's rows
// where its variant has them.
float norm_row_sum(uint row, uint count, bool residual, bool deviations, float mean) {
  const uint lane = gl_SubgroupInvocationID, size = gl_SubgroupSize;
  float s = 0.0;
#ifdef VEC4_NT
  if (!residual) {  // count (K) and row are multiples of 4
    const uint count4 = count / 4u;
    for (uint i0 = 0; i0 < count4; i0 += size) {
      const uint i = i0 + lane;
      vec4 v = a4(row / 4u + min(i, count4 - 1u));
      if (deviations) v -= mean;
      s += i < count4 ? (deviations ? dot(v, v) : v.x + v.y + v.z + v.w) : 0.0;
    }
    return s;
  }
#endif
  for (uint i0 = 0; i0 < count; i0 += size) {
    const uint i = i0 + lane, at = row + min(i, count - 1u);
#ifdef VEC4_NT
    float v = float(R[at]);
#else
    float v = residual ? float(R[at]) : float(A[at]);
#endif
    if (deviations) v = (v - mean) * (v - mean);
    s += i < count ? v : 0.0;
  }
  return s;
}

// The mean and 1/std of the rows row0 .. row0 + TM - 1 (past the edge: the last row),
// each by the whole subgroup, summed with subgroupAdd; two passes (the mean, then
// squared deviations from it), as the other kernels take them.
#ifdef ROW_STATS
// Row `row`'s mean and M2 from the stats_parts partials a previous product wrote: each
// lane sums a share, then the subgroup, by the parallel formula (Chan et al.): mean =
// sum(n_i mean_i) / n, M2 = sum(M2_i + n_i (mean_i - mean)^2). Exact, as the two
// passes over the row are: no E[v^2] - mean^2.
void merge_row_partials(uint row, out float mean, out float m2) {
  const uint lane = gl_SubgroupInvocationID, size = gl_SubgroupSize, parts = pc.stats_parts;
  float n = 0.0, sum = 0.0;
  for (uint p0 = 0; p0 < parts; p0 += size) {
    const uint p = p0 + lane;
    const vec4 v = stats_in[row * parts + min(p, parts - 1u)];
    if (p < parts) n += v.x, sum += v.x * v.y;
  }
  mean = subgroupAdd(sum) / subgroupAdd(n);
  float dev = 0.0;
  for (uint p0 = 0; p0 < parts; p0 += size) {
    const uint p = p0 + lane;
    const vec4 v = stats_in[row * parts + min(p, parts - 1u)];
    if (p < parts) dev += v.z + v.x * (v.y - mean) * (v.y - mean);
  }
  m2 = subgroupAdd(dev);
}
#endif

void norm_row_statistics(uint z, uint row0) {
  norm_row0 = row0;
  const bool residual = flag(FLAG_NORM_R);
#ifdef ROW_STATS
  if (flag(FLAG_STATS_IN)) {
    const uint count = residual ? pc.N : pc.K;
    UNROLL for (uint r = 0; r < TM; ++r) {
      float mean, m2;
      merge_row_partials(min(row0 + r, pc.M - 1u), mean, m2);
      norm_rstd[r] = norm_scale(mean, m2, count);
      norm_mean[r] = norm_center(mean);
    }
    return;
  }
#endif
  const uint count = residual ? pc.N : pc.K;
  const uint base = residual ? pc.base_r + batch_offset(z, pc.stride_r) : offset_a(z);
  const uint ld = residual ? pc.ldr : pc.lda;
  UNROLL for (uint r = 0; r < TM; ++r) {
    const uint row = base + min(row0 + r, pc.M - 1u) * ld;
    const float mean = subgroupAdd(residual ? norm_row_sum(row, count, true, false, 0.0)
                                            : norm_row_sum(row, count, false, false, 0.0)) / float(count);
    const float m2 = subgroupAdd(residual ? norm_row_sum(row, count, true, true, mean)
                                          : norm_row_sum(row, count, false, true, mean));
    norm_rstd[r] = norm_scale(mean, m2, count);
    norm_mean[r] = norm_center(mean);
  }
}
#else
#include "gemm_norm_rows.glsl"
#endif
#endif

// Row m of A at k .. k+3 (vec4 loads) or k, as the product reads it: normalised when a
// norm of A is folded in.
#ifdef VEC4_NT
vec4 a_vec4(uint a_off, uint m, uint kq) {
  vec4 v = a4((a_off + m * pc.lda) / 4u + kq);
#ifdef NORM_FOLDED
  if (flag(FLAG_NORM_A)) {
    const uint r = m - norm_row0;
    v = (v - norm_mean[r]) * norm_rstd[r] * vec4(norm_gamma4[kq]) + vec4(norm_beta4[kq]);
  }
#endif
  return v;
}
#else
float a_read(uint a_off, uint m, uint k) {
  const float v = a_at(a_off, m, k);
#ifdef NORM_FOLDED
  if (flag(FLAG_NORM_A)) return normalized(v, m, k);
#endif
  return v;
}
#endif


// acc + a . b as four FMAs (dot() and an add measured the same on lavapipe).
float fma4(vec4 a, vec4 b, float acc) {
  return fma(a.w, b.w, fma(a.z, b.z, fma(a.y, b.y, fma(a.x, b.x, acc))));
}

void main() {
  const uint WG = gl_WorkGroupSize.x;
  const uint lane = gl_LocalInvocationID.x;
  const bool glu = flag(FLAG_GLU);
  const uint OUT = glu ? TN / 2u : TN;  // outputs per invocation
  const uint m0 = gl_WorkGroupID.y * TM, n0 = gl_WorkGroupID.x * WG * OUT;  // n0: the first output column
  const uint z = gl_WorkGroupID.z;
  const uint a_off = offset_a(z);
  const uint b_off = offset_b(z);
#ifdef NORM_FOLDED
  if (flag(FLAG_NORM_A | FLAG_NORM_R)) norm_row_statistics(z, m0);  // uniform: the whole workgroup or none
  const bool norm_a = flag(FLAG_NORM_A);
#endif

  // Rows and columns past the edge read the last row or column (in bounds, and
  // uniform for the rows) and are not stored.
  uint rows[TM], cols[TN];
  UNROLL for (uint i = 0; i < TM; ++i) rows[i] = min(m0 + i, pc.M - 1u);
  UNROLL for (uint j = 0; j < TN; ++j) {
    if (!glu) cols[j] = min(n0 + lane + j * WG, pc.N - 1u);
    else cols[j] = j < TN / 2u ? min(n0 + lane + j * WG, pc.N - 1u) : min(n0 + lane + (j - TN / 2u) * WG, pc.N - 1u) + pc.N;
  }

  float acc[TM * TN];
  UNROLL for (uint i = 0; i < TM * TN; ++i) acc[i] = 0.0;
#if defined(SHUFFLE_A) && defined(NORM_FOLDED)
  // With shuffles each lane loads rows r * SG + lane of A and normalises them before
  // handing them on: one normalisation per loaded element instead of one per lane that
  // receives it (on lavapipe the latter cost as much as the product). The lane's
  // statistics are picked with constant indices (a dynamic index into a private array
  // is memory on a CPU driver).
  float lane_mean[TM / SG], lane_rstd[TM / SG];
  UNROLL for (uint r = 0; r < TM / SG; ++r)
    UNROLL for (uint s = 0; s < SG; ++s)
      if (s == gl_SubgroupInvocationID) lane_mean[r] = norm_mean[r * SG + s], lane_rstd[r] = norm_rstd[r * SG + s];
#endif

#ifdef VEC4_NT
  const uint K4 = pc.K / 4u;
#if defined(SHUFFLE_A) && defined(NORM_FOLDED)
  vec4 g_lane = vec4(1.0), be_lane = vec4(0.0);  // gamma and beta of step kq - kq % SG + lane
#endif
#ifdef QTYPE
  const uint KSTEP = 8u;  // a block: 8 vec4s of K
  const uint nb = pc.K / 32u, b_rows = glu ? 2u * pc.N : pc.N;
#else
  const uint KSTEP = 1u;
#endif
  for (uint kb = 0; kb < K4; kb += KSTEP) {
#ifdef QTYPE
    BlockRegs w[TN];  // each column's block kb / 8: its words, dequantized a vec4 a step
    UNROLL for (uint j = 0; j < TN; ++j) w[j] = block_regs(block_ref(cols[j], kb / 8u, b_rows, nb));
#endif
  UNROLL for (uint u = 0; u < KSTEP; ++u) {
    const uint kq = kb + u;
    vec4 b[TN];
#ifdef QTYPE
    UNROLL for (uint j = 0; j < TN; ++j) b[j] = block_vec4(w[j], u);
#else
    UNROLL for (uint j = 0; j < TN; ++j) b[j] = b4((b_off + cols[j] * pc.ldb) / 4u + kq);
#endif
#ifdef SHUFFLE_A
    // One load per lane brings SG rows' vec4s; each row is then shuffled to every lane
    // (a register broadcast on a CPU) instead of loaded by every lane.
#ifdef NORM_FOLDED
    // A folded norm's gamma and beta: every SG steps each lane loads those of one step
    // ahead, then each step takes them from its lane by a shuffle (a load at kq, the same
    // address in every lane, is still a gather on lavapipe: two per step cost 40%).
    vec4 g4 = vec4(1.0), be4 = vec4(0.0);
    if (norm_a) {
      const uint ks = kq % SG;
      if (ks == 0u) {
        const uint at = min(kq + gl_SubgroupInvocationID, K4 - 1u);
        g_lane = vec4(norm_gamma4[at]), be_lane = vec4(norm_beta4[at]);
      }
      g4 = subgroupShuffle(g_lane, ks), be4 = subgroupShuffle(be_lane, ks);
    }
#endif
    UNROLL for (uint r = 0; r < TM / SG; ++r) {
      vec4 mine = a4((a_off + min(m0 + r * SG + gl_SubgroupInvocationID, pc.M - 1u) * pc.lda) / 4u + kq);
#ifdef NORM_FOLDED
      if (norm_a) mine = (mine - lane_mean[r]) * lane_rstd[r] * g4 + be4;
#endif
      UNROLL for (uint s = 0; s < SG; ++s) {
        const vec4 a = subgroupShuffle(mine, s);
        UNROLL for (uint j = 0; j < TN; ++j) acc[(r * SG + s) * TN + j] = fma4(a, b[j], acc[(r * SG + s) * TN + j]);
      }
    }
#else
    UNROLL for (uint i = 0; i < TM; ++i) {
      const vec4 a = a_vec4(a_off, rows[i], kq);
      UNROLL for (uint j = 0; j < TN; ++j) acc[i * TN + j] = fma4(a, b[j], acc[i * TN + j]);
    }
#endif
  }
  }
#else
  // Any shape and transpose: scalar loads.
  for (uint k = 0; k < pc.K; ++k) {
    float b[TN];
    UNROLL for (uint j = 0; j < TN; ++j) b[j] = b_at(b_off, k, cols[j]);
#ifdef SHUFFLE_A
#ifdef NORM_FOLDED
    float g1 = 1.0, be1 = 0.0;
    if (norm_a) g1 = float(norm_gamma[k]), be1 = float(norm_beta[k]);
#endif
    UNROLL for (uint r = 0; r < TM / SG; ++r) {
      float mine = a_at(a_off, min(m0 + r * SG + gl_SubgroupInvocationID, pc.M - 1u), k);
#ifdef NORM_FOLDED
      if (norm_a) mine = (mine - lane_mean[r]) * lane_rstd[r] * g1 + be1;
#endif
      UNROLL for (uint s = 0; s < SG; ++s) {
        const float a = subgroupShuffle(mine, s);
        UNROLL for (uint j = 0; j < TN; ++j) acc[(r * SG + s) * TN + j] = fma(a, b[j], acc[(r * SG + s) * TN + j]);
      }
    }
#else
    UNROLL for (uint i = 0; i < TM; ++i) {
      const float a = a_read(a_off, rows[i], k);
      UNROLL for (uint j = 0; j < TN; ++j) acc[i * TN + j] = fma(a, b[j], acc[i * TN + j]);
    }
#endif
  }
#endif

  UNROLL for (uint i = 0; i < TM; ++i) {
    const uint m = m0 + i;
    if (m >= pc.M) break;  // uniform: the workgroup's rows
    if (glu) {  // (no ROW_STATS: the host writes no statistics of a gated product)
      UNROLL for (uint j = 0; j < TN / 2u; ++j) {  // (constant indices: a private array stays in registers)
        const uint n = n0 + lane + j * WG;
#ifdef NORM_FOLDED
        if (n < pc.N) store_glu_at(z, m, n, acc[i * TN + j], acc[i * TN + j + TN / 2u], i);
#else
        if (n < pc.N) store_glu(z, m, n, acc[i * TN + j], acc[i * TN + j + TN / 2u]);
#endif
      }
      continue;
    }
    float stored[TN];
    UNROLL for (uint j = 0; j < TN; ++j) {
      const uint n = n0 + lane + j * WG;
      stored[j] = 0.0;
#ifdef NORM_FOLDED
      if (n < pc.N) stored[j] = store_c_at(z, m, n, acc[i * TN + j], i);  // i: row m's statistics, a constant
#else
      if (n < pc.N) store_c(z, m, n, acc[i * TN + j]);
#endif
    }
#ifdef ROW_STATS
    // This subgroup's partial of row m: the count, mean and M2 of the values it stored
    // (two passes over registers), one vec4 per (row, subgroup).
    if (flag(FLAG_STATS_OUT)) {
      float count = 0.0, sum = 0.0;
      UNROLL for (uint j = 0; j < TN; ++j)
        if (n0 + lane + j * WG < pc.N) count += 1.0, sum += stored[j];
      const float n = subgroupAdd(count), total = subgroupAdd(sum);
      const float mean = n > 0.0 ? total / n : 0.0;  // n = 0: the subgroup's columns are all past N
      float dev = 0.0;
      UNROLL for (uint j = 0; j < TN; ++j)
        if (n0 + lane + j * WG < pc.N) dev += (stored[j] - mean) * (stored[j] - mean);
      const float m2 = subgroupAdd(dev);
      const uint per_group = WG / gl_SubgroupSize, parts = gl_NumWorkGroups.x * per_group;
      if (subgroupElect()) stats_out[m * parts + gl_WorkGroupID.x * per_group + gl_SubgroupID] = vec4(n, mean, m2, 0.0);
    }
#endif
  }
}
