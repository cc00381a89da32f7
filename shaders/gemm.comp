#version 450
// C = act(alpha * op(A) * op(B) + bias) + residual, row-major, batched.
//
// Each workgroup computes a BM x BN tile of C; each invocation a TM x TN register tile
// (rows tr + i*RT, columns tc + j*CT). Tiles of A and B pass through shared memory
// k-contiguous, [row][BK] as vec4s, so the inner loop does one vec4 load per row and
// per column and four FMAs per pair (dot): load instructions, not bytes, are what
// SIMD-across-invocation drivers like lavapipe pay for, and GPUs like vec4 loads too.
// Tile sizes are specialization constants chosen per device (lib/ops/gemm.cpp).
//
// Variants: VKF_FP16_STORAGE; SPLIT_K (gemm_common.glsl); VEC4_NT when op(A) = A [M, K] and op(B) = B^T [N, K]
// (Linear layers, Q K^T) with K, the leading dimensions and the batch offsets
// multiples of 4: global loads are then vec4 too. PREFETCH (GemmTiles::prefetch, with
// VEC4_NT): the next BK step's vec4s are loaded into registers before this step's
// arithmetic and stored to shared memory after it, so a GPU's global-load latency
// overlaps the FMAs instead of stalling every step (one workgroup per SM at M = 24 has
// nothing else to hide it behind). Everything else is a push constant.
// FLAG_GLU (gemm_flags.h, TN even): a workgroup's BN columns of op(B) are BN / 2 outputs'
// gates then the same outputs' ups, so invocation column j < TN / 2 meets its up at
// j + TN / 2.
// QTYPE (host: Gemm::b_blocks, a prompt's product on GPUs; with VEC4_NT): B a Linear
// weight in llama.cpp's blocks (blocks.glsl), each vec4 of op(B)'s tile dequantized as it
// is loaded, so no dequantized copy of the weight is written and read back.
#extension GL_GOOGLE_include_directive : require
#include "types.glsl"
#include "activations.glsl"

// NORM_FOLDED (host: a product with Gemm::norm_of): a LayerNorm of A's rows
// (FLAG_NORM_A, applied as the tiles are loaded) or of the residual's (FLAG_NORM_R)
// folded in, its weights at bindings 7 and 8, NORM_ROWS = BM rows' statistics per
// workgroup (gemm_norm_rows.glsl).
#ifdef NORM_FOLDED
#define GEMM_NORM
#endif
#ifdef VEC4_NT
layout(std430, set = 0, binding = 0) readonly buffer BufA4 { store_vec4 A4[]; };
#ifndef QTYPE
layout(std430, set = 0, binding = 1) readonly buffer BufB4 { store_vec4 B4[]; };
#endif
#ifdef NORM_FOLDED
layout(std430, set = 0, binding = 7) readonly buffer NormGamma4 { store_vec4 norm_gamma4[]; };
layout(std430, set = 0, binding = 8) readonly buffer NormBeta4 { store_vec4 norm_beta4[]; };
#endif
#define GEMM_SKIP_AB
#elif defined(QTYPE)
#error "B in blocks is read as vec4s: VEC4_NT"
#endif
#include "gemm_common.glsl"
#ifdef QTYPE
#include "blocks.glsl"
#endif

#ifdef NORM_FOLDED
float norm_source(uint z, uint m, uint i) {
  if (flag(FLAG_NORM_R)) return float(R[pc.base_r + batch_offset(z, pc.stride_r) + m * pc.ldr + i]);
#ifdef VEC4_NT
  const uint at = offset_a(z) + m * pc.lda + i;
  return float(A4[at / 4u][at % 4u]);
#else
  return a_at(offset_a(z), m, i);
#endif
}
#ifdef VEC4_NT
#define NORM_SOURCE4
vec4 norm_source4(uint z, uint m, uint q) { return vec4(A4[(offset_a(z) + m * pc.lda) / 4u + q]); }
#endif
#include "gemm_norm_rows.glsl"
#endif

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint BM = 64;
layout(constant_id = 2) const uint BN = 64;
layout(constant_id = 3) const uint BK = 16;  // a multiple of 4
layout(constant_id = 4) const uint TM = 4;
layout(constant_id = 5) const uint TN = 4;

const uint RT = BM / TM;  // invocations along a tile's rows
const uint CT = BN / TN;  // and along its columns
const uint WG = RT * CT;
const uint BK4 = BK / 4;
#if defined(VEC4_NT) && defined(PREFETCH)
const uint A_LOADS = (BM * BK4 + WG - 1) / WG, B_LOADS = (BN * BK4 + WG - 1) / WG;  // vec4s per invocation
#endif

shared vec4 As[BM * BK4];  // As[m * BK4 + k/4] = A(m0 + m, k0 + k .. k+3)
shared vec4 Bs[BN * BK4];  // Bs[n * BK4 + k/4] = op(B)(k0 + k .. k+3, column n of the tile)

// Column n of the tile as a column of op(B) (outputs from n0 on), or ~0u past its edge.
uint tile_column(uint n0, uint n) {
  if (!flag(FLAG_GLU)) return n0 + n < pc.N ? n0 + n : ~0u;
  const uint o = n0 + n % (BN / 2u);
  return o < pc.N ? (n < BN / 2u ? o : pc.N + o) : ~0u;
}

#ifdef VEC4_NT
// Element i of the step's A tile, [BM][BK4] vec4s from column k0 (normalised with a folded norm).
vec4 a_tile_vec4(uint i, uint m0, uint k0, uint k_last, uint a_off) {
  const uint m = i / BK4, kq = i % BK4, gm = m0 + m, gk = k0 + 4 * kq;
  vec4 v = (gm < pc.M && gk < k_last) ? vec4(A4[(a_off + gm * pc.lda + gk) / 4]) : vec4(0.0);
#ifdef NORM_FOLDED
  if (flag(FLAG_NORM_A) && gm < pc.M && gk < k_last)
    v = (v - norm_mean[m]) * norm_rstd[m] * vec4(norm_gamma4[gk / 4]) + vec4(norm_beta4[gk / 4]);
#endif
  return v;
}
// Element i of the step's op(B) tile, [BN][BK4] vec4s.
vec4 b_tile_vec4(uint i, uint n0, uint k0, uint k_last, uint b_off) {
  const uint n = i / BK4, kq = i % BK4, gn = tile_column(n0, n), gk = k0 + 4 * kq;
#ifdef QTYPE  // (a gated product's weight: its gates' rows, then its ups')
  const uint rows = flag(FLAG_GLU) ? 2u * pc.N : pc.N;
  return (gn != ~0u && gk < k_last) ? block_row_vec4(gn, gk, rows, pc.K / 32u) : vec4(0.0);
#else
  return (gn != ~0u && gk < k_last) ? vec4(B4[(b_off + gn * pc.ldb + gk) / 4]) : vec4(0.0);
#endif
}
#endif

void main() {
  const uint tid = gl_LocalInvocationID.x;
  const uint tr = tid / CT, tc = tid % CT;
  const bool glu = flag(FLAG_GLU);
  const uint m0 = gl_WorkGroupID.y * BM, n0 = gl_WorkGroupID.x * (glu ? BN / 2u : BN);  // n0: the first output column
  const uint z = gemm_batch();
  const uint a_off = offset_a(z);
  const uint b_off = offset_b(z);
  const uint k_first = k_begin(BK), k_last = k_end(BK);  // all of K, or a split-K slice's run
#ifdef NORM_FOLDED
  if (flag(FLAG_NORM_A | FLAG_NORM_R)) norm_row_statistics(z, m0);  // uniform: the whole workgroup or none
  const bool norm_a = flag(FLAG_NORM_A);
#endif

  float acc[TM * TN];
  UNROLL for (uint i = 0; i < TM * TN; ++i) acc[i] = 0.0;

#if defined(VEC4_NT) && defined(PREFETCH)
  vec4 next_a[A_LOADS], next_b[B_LOADS];  // the coming step's share of the tiles
  // This invocation's share of the step from k on, into next_a and next_b.
#define FETCH_TILES(k)                                                                              \
  UNROLL for (uint r = 0; r < A_LOADS; ++r)                                                                \
    if (tid + r * WG < BM * BK4) next_a[r] = a_tile_vec4(tid + r * WG, m0, (k), k_last, a_off);     \
  UNROLL for (uint r = 0; r < B_LOADS; ++r)                                                                \
    if (tid + r * WG < BN * BK4) next_b[r] = b_tile_vec4(tid + r * WG, n0, (k), k_last, b_off);
  FETCH_TILES(k_first)
#endif
  for (uint k0 = k_first; k0 < k_last; k0 += BK) {
#if defined(VEC4_NT) && defined(PREFETCH)
    UNROLL for (uint r = 0; r < A_LOADS; ++r)
      if (tid + r * WG < BM * BK4) As[tid + r * WG] = next_a[r];
    UNROLL for (uint r = 0; r < B_LOADS; ++r)
      if (tid + r * WG < BN * BK4) Bs[tid + r * WG] = next_b[r];
    barrier();
    if (k0 + BK < k_last) {  // uniform: the next step's loads in flight during this one's FMAs
      FETCH_TILES(k0 + BK)
    }
#elif defined(VEC4_NT)
    for (uint i = tid; i < BM * BK4; i += WG) As[i] = a_tile_vec4(i, m0, k0, k_last, a_off);
    for (uint i = tid; i < BN * BK4; i += WG) Bs[i] = b_tile_vec4(i, n0, k0, k_last, b_off);
#else
    // Any shape and transpose: scalar loads in memory order, scattered into the tiles.
    const bool a_m_fast = flag(FLAG_TRANS_A), b_n_fast = !flag(FLAG_TRANS_B);
    for (uint i = tid; i < BM * BK; i += WG) {
      uint m = a_m_fast ? i % BM : i / BK, k = a_m_fast ? i / BM : i % BK;
      uint gm = m0 + m, gk = k0 + k;
      float v = (gm < pc.M && gk < k_last) ? a_at(a_off, gm, gk) : 0.0;
#ifdef NORM_FOLDED
      if (norm_a && gm < pc.M && gk < k_last) v = normalized(v, gm, gk);
#endif
      As[m * BK4 + k / 4][k % 4] = v;
    }
    for (uint i = tid; i < BN * BK; i += WG) {
      uint n = b_n_fast ? i % BN : i / BK, k = b_n_fast ? i / BN : i % BK;
      uint gn = tile_column(n0, n), gk = k0 + k;
      Bs[n * BK4 + k / 4][k % 4] = (gn != ~0u && gk < k_last) ? b_at(b_off, gk, gn) : 0.0;
    }
#endif
#if !(defined(VEC4_NT) && defined(PREFETCH))
    barrier();
#endif
    UNROLL for (uint kq = 0; kq < BK4; ++kq) {
      vec4 a[TM], b[TN];
      UNROLL for (uint i = 0; i < TM; ++i) a[i] = As[(tr + i * RT) * BK4 + kq];
      UNROLL for (uint j = 0; j < TN; ++j) b[j] = Bs[(tc + j * CT) * BK4 + kq];
      UNROLL for (uint i = 0; i < TM; ++i)
        UNROLL for (uint j = 0; j < TN; ++j) acc[i * TN + j] += dot(a[i], b[j]);
    }
    barrier();
  }

  UNROLL for (uint i = 0; i < TM; ++i) {
    uint m = m0 + tr + i * RT;
    if (m >= pc.M) continue;
    if (glu) {
      UNROLL for (uint j = 0; j < TN / 2u; ++j) {
        uint n = n0 + tc + j * CT;
        if (n < pc.N) store_glu(z, m, n, acc[i * TN + j], acc[i * TN + j + TN / 2u]);
      }
      continue;
    }
    UNROLL for (uint j = 0; j < TN; ++j) {
      uint n = n0 + tc + j * CT;
      if (n < pc.N) store_c(z, m, n, acc[i * TN + j]);
    }
  }
}
