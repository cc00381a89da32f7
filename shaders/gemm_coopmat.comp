#version 450
// C = act(alpha * op(A) * op(B) + bias) + residual with NVIDIA's cooperative matrices
// (GL_NV_cooperative_matrix, which glslang 12 compiles; the KHR form it does not): fp16
// A and B, fp32 accumulation, the tensor cores' 16x16x16 products. fp16 storage only
// (the host never picks it for fp32: fp16 inputs would cost fp32 products 11 bits).
//
// A workgroup computes a BM x BN block of C as (BM / TM) x (BN / TN) subgroups of 32
// invocations, each a TM x TN tile of 16x16 accumulators. BK of K at a time, op(A)'s
// and op(B)'s tiles are staged in shared memory k-contiguous ([row][BK], [column][BK]:
// op(B)'s tile is then a column-major K x N matrix, which coopMatLoadNV reads with
// colMajor), every transpose through the same scalar loads as gemm.comp's general path.
// The epilogue goes through shared memory: the accumulators are stored there and every
// invocation applies store_c (bias, activation, residual, split and step rows exactly
// as the other kernels do) to its share of the block.
//
// PREFETCH (GemmTiles::prefetch, host: A [M, K] and B [N, K] with K, the leading
// dimensions and offsets multiples of 4, as gemm.comp's VEC4_NT): the tiles are read as
// f16vec4s, four halves a load where the scalar staging takes one, and the next BK
// step's are loaded into registers before this step's products, so their latency
// overlaps the tensor cores' work instead of stalling each step.
//
// WIDE (host: a GemmTiles::wide design, where A's and B's rows are whole 16-byte uvec4s:
// K, the leading dimensions and offsets multiples of 8): the prefetch's loads are uvec4s
// of eight halves, stored to the shared tiles whole, which are then uvec4 arrays that
// coopMatLoadNV reads in uvec4 units (the layout NVIDIA's cooperative-matrix samples
// stage through). A uvec4 load stands for two f16vec4 ones, and its one 16-byte shared
// store for eight 2-byte ones: two staging instructions per eight halves where the
// f16vec4 form issues ten. Otherwise the same tiles, padding and epilogue as PREFETCH.
//
// PREFETCH_LAYOUT (host: every GemmTiles::prefetch design, with or without PREFETCH
// itself): the shared tiles' rows are padded from BK to BK + 8 halves, so the 16 rows a
// coopMatLoadNV reads start on different banks (at BK = 32 unpadded, rows 64 bytes apart
// share banks two by two: a 4-way conflict on every load), and the epilogue goes through
// one 16x16 block per subgroup instead of the workgroup's whole BM x BN block of C, so
// 128x128 blocks with 64x64 per subgroup (twice the reuse of each loaded matrix) fit the
// 48 KiB of shared memory that NVIDIA's drivers offer.
//
// QTYPE (host: Gemm::b_blocks, a prompt's product; never with WIDE): B a Linear weight in
// llama.cpp's blocks (blocks.glsl), op(B)'s tile dequantized into halves as it is staged,
// so no dequantized copy of the weight is written and read back.
//
// COOPMAT_EMULATED (host: VKF_EMULATE_COOPMAT=1, for tests on devices without NV
// cooperative matrices, lavapipe in CI): the same kernel with its matrices emulated by
// plain shared-memory reads, "subgroups" of 32 consecutive invocations whatever the
// device's subgroup size, so its staging, padding, split-K and epilogues run against the
// double reference everywhere. Slow: a way to test the kernel, not to run it.
#extension GL_GOOGLE_include_directive : require
#ifndef COOPMAT_EMULATED
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#define ROLLED UNROLL  // (types.glsl: unrolled on GPUs)
#else
// Loops the emulation keeps rolled: unrolled, its products are thousands of fused
// multiply-adds per tile, which llvmpipe's LLVM took minutes to compile per variant.
#extension GL_EXT_control_flow_attributes : require
#define ROLLED [[dont_unroll]]
#endif
#ifndef VKF_FP16_STORAGE
#define VKF_FP16_STORAGE  // the only storage this kernel runs (the host never asks for another)
#endif
#include "types.glsl"
#include "activations.glsl"
#if defined(WIDE) && !(defined(PREFETCH) && defined(PREFETCH_LAYOUT))
#error "WIDE is a form of the prefetch designs' staging"
#endif
#if defined(WIDE) && defined(QTYPE)
#error "B in blocks is staged a vec4 at a time, not WIDE"
#endif
#if defined(PREFETCH) && defined(WIDE)
layout(std430, set = 0, binding = 0) readonly buffer BufA8 { uvec4 A8[]; };  // eight halves each
layout(std430, set = 0, binding = 1) readonly buffer BufB8 { uvec4 B8[]; };
#define GEMM_SKIP_AB
#elif defined(PREFETCH)
layout(std430, set = 0, binding = 0) readonly buffer BufA4 { store_vec4 A4[]; };
#ifndef QTYPE
layout(std430, set = 0, binding = 1) readonly buffer BufB4 { store_vec4 B4[]; };
#endif
#define GEMM_SKIP_AB
#elif defined(QTYPE)
#define GEMM_SKIP_B
#endif
#include "gemm_common.glsl"
#ifdef QTYPE
#include "blocks.glsl"
#endif

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint BM = 64;
layout(constant_id = 2) const uint BN = 64;
layout(constant_id = 3) const uint BK = 32;  // a multiple of 16
layout(constant_id = 4) const uint TM = 32;  // a subgroup's rows, a multiple of 16
layout(constant_id = 5) const uint TN = 32;  // and columns

const uint MT = TM / 16, NT = TN / 16;  // 16x16 accumulators per subgroup, by rows and columns
const uint SUBGROUPS_N = BN / TN;

#ifdef PREFETCH_LAYOUT
const uint BKP = BK + 8;  // a shared row's halves: 16 bytes of padding
const uint SUBGROUPS = (BM / TM) * (BN / TN);
shared float Cs[SUBGROUPS * 256];  // each subgroup's 16x16 block of C before the epilogue
#else
const uint BKP = BK;
shared float Cs[BM * BN];  // the block of C before the epilogue
#endif
#if !defined(COOPMAT_EMULATED) && defined(WIDE)
// The same halves in the same places, eight to a uvec4 (BKP and every row's start are
// multiples of 8): element and stride in uvec4 units at the loads below.
shared uvec4 As[BM * BKP / 8];
shared uvec4 Bs[BN * BKP / 8];
#define PUT8(tile, at, v) tile[(at) / 8] = v
#elif !defined(COOPMAT_EMULATED)
#define tile_vec4 f16vec4
shared float16_t As[BM * BKP];  // As[m * BKP + k] = op(A)(m0 + m, k0 + k)
shared float16_t Bs[BN * BKP];  // Bs[n * BKP + k] = op(B)(k0 + k, n0 + n)
// Halves at..at+3 of a tile from a vec4 (at a multiple of 4), at and at+1 from a vec2 (at even).
#define PUT4(tile, at, v) UNROLL for (uint c_ = 0; c_ < 4; ++c_) tile[(at) + c_] = v[c_]
#define PUT2(tile, at, v) tile[at] = float16_t(v.x), tile[(at) + 1] = float16_t(v.y)
#else
// The same halves in the same places, two to a uint (packHalf2x16: the emulation needs
// no fp16 arithmetic, which CPU drivers leave off; the values are fp16 storage's).
#define tile_vec4 vec4
shared uint As[BM * BKP / 2];
shared uint Bs[BN * BKP / 2];
#define PUT4(tile, at, v) tile[(at) / 2] = packHalf2x16(v.xy), tile[(at) / 2 + 1] = packHalf2x16(v.zw)
#define PUT2(tile, at, v) tile[(at) / 2] = packHalf2x16(v)
#define PUT8(tile, at, v) UNROLL for (uint c_ = 0; c_ < 4; ++c_) tile[(at) / 2 + c_] = v[c_]
float a_tile(uint e) { return unpackHalf2x16(As[e / 2u])[e % 2u]; }
float b_tile(uint e) { return unpackHalf2x16(Bs[e / 2u])[e % 2u]; }
#endif

// The matrix operations: 16x16 fp16 tiles of As (A, row-major) and Bs (B, K x N,
// column-major), fp32 16x16 accumulators, a 16x16 store to a float array.
#ifndef COOPMAT_EMULATED
#define ACC fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>
#define HALF fcoopmatNV<16, gl_ScopeSubgroup, 16, 16>
#define SUBGROUP_ID gl_SubgroupID
#define LANE gl_SubgroupInvocationID
#define ACC_ZERO ACC(0.0)
#ifdef WIDE
#define LOAD_A(m, element, stride) coopMatLoadNV(m, As, (element) / 8, (stride) / 8, false)
#define LOAD_B(m, element, stride) coopMatLoadNV(m, Bs, (element) / 8, (stride) / 8, true)
#else
#define LOAD_A(m, element, stride) coopMatLoadNV(m, As, element, stride, false)
#define LOAD_B(m, element, stride) coopMatLoadNV(m, Bs, element, stride, true)
#endif
#define MUL_ADD(a, b, c) coopMatMulAddNV(a, b, c)
#define STORE_ACC(m, buf, element, stride) coopMatStoreNV(m, buf, element, stride, false)
#define SUBGROUP_SYNC() subgroupMemoryBarrierShared(); subgroupBarrier()
#else
// A tile is where it lies in As or Bs (read there at the product, which the kernel runs
// between the same barriers as the load); lane l of an accumulator holds row l / 2,
// columns 8 (l % 2) to 8 (l % 2) + 7. fp16 x fp16 products are exact in fp32, as the
// tensor cores'; the sum runs over k in order.
struct HALF { uint element, stride; };
struct ACC { float v[8]; };
#define SUBGROUP_ID (gl_LocalInvocationID.x / 32u)
#define LANE (gl_LocalInvocationID.x % 32u)
#define ACC_ZERO ACC(float[8](0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0))
#define LOAD_A(m, e, s) m = HALF(e, s)
#define LOAD_B(m, e, s) m = HALF(e, s)
ACC MUL_ADD(HALF a, HALF b, ACC c) {
  const uint r = LANE / 2u, c0 = 8u * (LANE % 2u);
  ROLLED for (uint q = 0; q < 8u; ++q) {
    float sum = c.v[q];
    ROLLED for (uint k = 0; k < 16u; ++k)
      sum += a_tile(a.element + r * a.stride + k) * b_tile(b.element + (c0 + q) * b.stride + k);
    c.v[q] = sum;
  }
  return c;
}
#define STORE_ACC(m, buf, e, s) \
  UNROLL for (uint q_ = 0; q_ < 8u; ++q_) buf[(e) + (LANE / 2u) * (s) + 8u * (LANE % 2u) + q_] = m.v[q_]
#define SUBGROUP_SYNC() barrier()  // every virtual subgroup runs the epilogue's loop alike
#endif

#if defined(PREFETCH) && defined(WIDE)
#define stage_t uvec4  // eight halves, as stored
const uint PER = 8;    // halves per staged load
#define A_STAGED(at) A8[(at) / 8]
#define B_STAGED(at) B8[(at) / 8]
#define STAGE_ZERO uvec4(0)  // eight +0.0 halves
#define PUT_STAGED PUT8
#elif defined(PREFETCH)
#define stage_t tile_vec4
const uint PER = 4;
#define A_STAGED(at) tile_vec4(A4[(at) / 4])
#define B_STAGED(at) tile_vec4(B4[(at) / 4])
#define STAGE_ZERO tile_vec4(0.0)
#define PUT_STAGED PUT4
#endif
#ifdef PREFETCH
const uint BKV = BK / PER;  // staged loads per tile row
// Staged load i of the step's op(A) tile ([BM][BKV] from column k0) and of op(B)'s ([BN][BKV]).
stage_t a_tile_load(uint i, uint m0, uint k0, uint k_last, uint a_off) {
  const uint gm = m0 + i / BKV, gk = k0 + PER * (i % BKV);
  return gm < pc.M && gk < k_last ? A_STAGED(a_off + gm * pc.lda + gk) : STAGE_ZERO;
}
stage_t b_tile_load(uint i, uint n0, uint k0, uint k_last, uint b_off) {
  const uint gn = n0 + i / BKV, gk = k0 + PER * (i % BKV);
#ifdef QTYPE
  return gn < pc.N && gk < k_last ? tile_vec4(block_row_vec4(gn, gk, pc.N, pc.K / 32u)) : STAGE_ZERO;
#else
  return gn < pc.N && gk < k_last ? B_STAGED(b_off + gn * pc.ldb + gk) : STAGE_ZERO;
#endif
}
#endif

void main() {
  const uint WG = gl_WorkGroupSize.x;
  const uint tid = gl_LocalInvocationID.x;
  const uint sm = (SUBGROUP_ID / SUBGROUPS_N) * TM, sn = (SUBGROUP_ID % SUBGROUPS_N) * TN;
  const uint m0 = gl_WorkGroupID.y * BM, n0 = gl_WorkGroupID.x * BN;
  const uint z = gemm_batch();
  const uint a_off = offset_a(z);
  const uint b_off = offset_b(z);
  const uint k_first = k_begin(BK), k_last = k_end(BK);  // all of K, or a split-K slice's run

  ACC acc[MT * NT];
  UNROLL for (uint i = 0; i < MT * NT; ++i) acc[i] = ACC_ZERO;

#ifdef PREFETCH
  // Spec-constant sizes: at most 8 staged loads of each tile per invocation (the designs
  // have 1 to 4); a workgroup of WG covers the rest in further rounds.
  const uint AS = BM * BKV, BS = BN * BKV;
  stage_t next_a[8], next_b[8];
  // This invocation's share of the step from k on, into next_a and next_b.
#define FETCH_TILES(k)                                                                   \
  UNROLL for (uint r = 0; r < 8; ++r) {                                                  \
    if (tid + r * WG < AS) next_a[r] = a_tile_load(tid + r * WG, m0, (k), k_last, a_off); \
    if (tid + r * WG < BS) next_b[r] = b_tile_load(tid + r * WG, n0, (k), k_last, b_off); \
  }
  FETCH_TILES(k_first)
#endif
  for (uint k0 = k_first; k0 < k_last; k0 += BK) {
#ifdef PREFETCH
    UNROLL for (uint r = 0; r < 8; ++r) {
      const uint i = tid + r * WG, at = (i / BKV) * BKP + PER * (i % BKV);  // load i's first half in the padded rows
      if (i < AS) PUT_STAGED(As, at, next_a[r]);
      if (i < BS) PUT_STAGED(Bs, at, next_b[r]);
    }
    barrier();
    if (k0 + BK < k_last) {  // uniform: the next step's loads in flight during this one's products
      FETCH_TILES(k0 + BK)
    }
#else
    // Two elements at a time (BK is even: a pair never straddles rows), so the emulation's
    // packed tiles take whole uints from each invocation.
    for (uint i = 2 * tid; i < BM * BK; i += 2 * WG) {
      const uint gm = m0 + i / BK, gk = k0 + i % BK;
      const vec2 v = vec2(gm < pc.M && gk < k_last ? a_at(a_off, gm, gk) : 0.0,
                          gm < pc.M && gk + 1 < k_last ? a_at(a_off, gm, gk + 1) : 0.0);
      PUT2(As, (i / BK) * BKP + i % BK, v);
    }
    for (uint i = 2 * tid; i < BN * BK; i += 2 * WG) {
      const uint gn = n0 + i / BK, gk = k0 + i % BK;
#ifdef QTYPE  // (gk even and K whole blocks: the pair lies in one vec4, in bounds with gk)
      const vec4 q = gn < pc.N && gk < k_last ? block_row_vec4(gn, gk & ~3u, pc.N, pc.K / 32u) : vec4(0.0);
      const vec2 v = (gk & 2u) != 0u ? q.zw : q.xy;
#else
      const vec2 v = vec2(gn < pc.N && gk < k_last ? b_at(b_off, gk, gn) : 0.0,
                          gn < pc.N && gk + 1 < k_last ? b_at(b_off, gk + 1, gn) : 0.0);
#endif
      PUT2(Bs, (i / BK) * BKP + i % BK, v);
    }
    barrier();
#endif
    ROLLED for (uint kk = 0; kk < BK; kk += 16) {
      HALF a[MT], b[NT];
      UNROLL for (uint i = 0; i < MT; ++i) LOAD_A(a[i], (sm + 16 * i) * BKP + kk, BKP);
      UNROLL for (uint j = 0; j < NT; ++j) LOAD_B(b[j], (sn + 16 * j) * BKP + kk, BKP);
      ROLLED for (uint i = 0; i < MT; ++i)
        ROLLED for (uint j = 0; j < NT; ++j) acc[i * NT + j] = MUL_ADD(a[i], b[j], acc[i * NT + j]);
    }
    barrier();
  }

#ifdef PREFETCH_LAYOUT
  // Each subgroup's accumulators one 16x16 block at a time through its own 256 floats:
  // no workgroup barrier, and the block of C never whole in shared memory. Written out
  // block by block, not as a loop: with the subgroup barriers inside, an H100's compiler
  // (driver 580) kept such a loop rolled and so every accumulator in local memory, the
  // main loop's included (VKF_PIPELINE_STATS: 32 bytes of local memory per accumulator,
  // 128 to 512 per design). gemm_tiles_problem allows at most 16 accumulators.
  const uint block = SUBGROUP_ID * 256;
#define EPILOGUE_BLOCK(b)                                                             \
  if ((b) < MT * NT) {                                                                \
    STORE_ACC(acc[b], Cs, block, 16);                                                 \
    SUBGROUP_SYNC();                                                                  \
    for (uint e = LANE; e < 256; e += 32) {                                           \
      const uint m = m0 + sm + 16 * ((b) / NT) + e / 16, n = n0 + sn + 16 * ((b) % NT) + e % 16; \
      if (m < pc.M && n < pc.N) store_c(z, m, n, Cs[block + e]);                      \
    }                                                                                 \
    SUBGROUP_SYNC(); /* every lane has read the block before the next overwrites it */ \
  }
#ifdef COOPMAT_EMULATED
  // The emulation keeps it a loop: written out, its 16 copies of store_c's epilogue
  // took most of llvmpipe's compile time per design.
  ROLLED for (uint b = 0; b < MT * NT; ++b) EPILOGUE_BLOCK(b)
#else
  EPILOGUE_BLOCK(0) EPILOGUE_BLOCK(1) EPILOGUE_BLOCK(2) EPILOGUE_BLOCK(3)
  EPILOGUE_BLOCK(4) EPILOGUE_BLOCK(5) EPILOGUE_BLOCK(6) EPILOGUE_BLOCK(7)
  EPILOGUE_BLOCK(8) EPILOGUE_BLOCK(9) EPILOGUE_BLOCK(10) EPILOGUE_BLOCK(11)
  EPILOGUE_BLOCK(12) EPILOGUE_BLOCK(13) EPILOGUE_BLOCK(14) EPILOGUE_BLOCK(15)
#endif
#else
  UNROLL for (uint i = 0; i < MT; ++i)
    UNROLL for (uint j = 0; j < NT; ++j) STORE_ACC(acc[i * NT + j], Cs, (sm + 16 * i) * BN + sn + 16 * j, BN);
  barrier();
  for (uint i = tid; i < BM * BN; i += WG) {
    const uint m = m0 + i / BN, n = n0 + i % BN;
    if (m < pc.M && n < pc.N) store_c(z, m, n, Cs[i]);
  }
#endif
}
