#version 450
// The decode-step GEMM on CPU drivers over a weight in llama.cpp's blocks: C [M, N] =
// A [M, K] B^T with B a Linear weight [N, K] in blocks (blocks.glsl, rows interleaved in
// 16s). Each invocation owns COLS whole output columns of ROWS rows (1 to 32) and walks
// all of K, so every block is loaded once for all of them (a batch's step); a product of
// more rows (a prompt) runs in chunks of ROWS along the grid's y, each reading the blocks
// again, and never needs a dequantized copy of the weight.
//
// On llvmpipe an invocation is one lane of a SIMD vector, and a load whose address
// differs by lane is a loop over lanes. So A, the same for every lane, arrives by
// subgroup broadcasts: lane l loads unit l of each run of SG 16-byte units, and the loop
// hands each unit to all lanes (a vector shuffle). With one or two rows, lane l also
// unpacks and scales its unit (the SIMD vector does all lanes' at once) and the loop
// hands out floats, so each value is unpacked once per subgroup, not once per lane. (A
// load whose address is the same in every lane measured 1.5x slower: it is no cheaper.)
// No shared memory, no barriers (a barrier makes llvmpipe switch coroutines); each
// invocation stores its own columns.
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_ballot : require
#extension GL_EXT_control_flow_attributes : require
#include "types.glsl"
#include "activations.glsl"

#define GEMM_SKIP_AB
#include "gemm_common.glsl"

#ifndef ROWS
#define ROWS 1  // (host: the product's M if at most 2, else the next power of two up to 32)
#endif
// Rows past the product's M (pc.M) are neither loaded nor stored: one variant serves each
// class of row counts (3-4, 5-8, ..., 17 and more), so prompts of every length do not
// compile a pipeline each. row0: the first row of this workgroup's chunk.
#if ROWS <= 2
#define ROW_USED(m) true
#else
#define ROW_USED(m) (row0 + (m) < pc.M)
#endif
#ifndef COLS
#define COLS 2  // output columns per invocation (host)
#endif
// The columns an invocation sums: its COLS, and a gated product's (GLU) each one's up
// column too. A constant, so that a plain product's arrays hold only its own columns.
#ifdef GLU
#define SUMS (2u * COLS)
#else
#define SUMS COLS
#endif
#ifndef SG
#define SG 8  // (host: the device's subgroup size, 8 or 16: a run of SG units holds a whole block)
#endif
#ifndef WG_SIZE
#define WG_SIZE 64
#endif
layout(local_size_x = WG_SIZE) in;

// A's rows in 16-byte units: 8 halves or 4 floats (host: rows and offsets on whole units),
// as texels where its view holds them (TEXEL_A, with TEXEL_B): llvmpipe's lane-by-lane
// texel fetch costs less than its gather from a storage buffer.
#ifdef TEXEL_A
layout(set = 0, binding = 0, rgba32ui) uniform restrict readonly uimageBuffer A_texels;
#define A_UNIT(i) imageLoad(A_texels, int(i))
#else
layout(std430, set = 0, binding = 0) readonly buffer AUnits { uvec4 a_units[]; };
#define A_UNIT(i) a_units[i]
#endif
#ifdef VKF_FP16_STORAGE
#define UNIT_VALUES 8u
#else
#define UNIT_VALUES 4u
#endif
// Values [4p, 4p + 4) of a unit.
vec4 unit_vec4(uvec4 u, uint p) {
#ifdef VKF_FP16_STORAGE
  return p == 0u ? vec4(unpackHalf2x16(u.x), unpackHalf2x16(u.y)) : vec4(unpackHalf2x16(u.z), unpackHalf2x16(u.w));
#else
  return uintBitsToFloat(u);
#endif
}

// v of lane i in every lane (i a constant once the loops over it are unrolled:
// subgroupBroadcast takes a constant lane).
uvec4 lane_value(uvec4 v, uint i) {
  switch (i) {
    case 0u: return subgroupBroadcast(v, 0u);
    case 1u: return subgroupBroadcast(v, 1u);
    case 2u: return subgroupBroadcast(v, 2u);
    case 3u: return subgroupBroadcast(v, 3u);
#if SG > 4
    case 4u: return subgroupBroadcast(v, 4u);
    case 5u: return subgroupBroadcast(v, 5u);
    case 6u: return subgroupBroadcast(v, 6u);
    case 7u: return subgroupBroadcast(v, 7u);
#endif
#if SG > 8
    case 8u: return subgroupBroadcast(v, 8u);
    case 9u: return subgroupBroadcast(v, 9u);
    case 10u: return subgroupBroadcast(v, 10u);
    case 11u: return subgroupBroadcast(v, 11u);
    case 12u: return subgroupBroadcast(v, 12u);
    case 13u: return subgroupBroadcast(v, 13u);
    case 14u: return subgroupBroadcast(v, 14u);
    case 15u: return subgroupBroadcast(v, 15u);
#endif
  }
  return uvec4(0u);
}

// The same for a vec4 and a float.
vec4 lane_vec4(vec4 v, uint i) { return uintBitsToFloat(lane_value(floatBitsToUint(v), i)); }
float lane_float(float v, uint i) { return uintBitsToFloat(lane_value(uvec4(floatBitsToUint(v)), i).x); }

#include "blocks.glsl"
#include "gemm_columns_blocks.glsl"  // block_dot: one block's dot with A's

void main() {
  const uint z = gl_WorkGroupID.z, lane = gl_SubgroupInvocationID, row0 = gl_WorkGroupID.y * ROWS;
  // Columns n0 .. n0 + COLS - 1; a gated product's each with its up column N + n.
  const uint n0 = gl_GlobalInvocationID.x * COLS;
  uint rows_of_b[SUMS];  // B's row of each column (clamped: every load in bounds), then of its up
  UNROLL for (uint c = 0; c < COLS; ++c) {
    rows_of_b[c] = min(n0 + c, pc.N - 1u);
#ifdef GLU
    rows_of_b[COLS + c] = rows_of_b[c] + pc.N;
#endif
  }
  const uint lda_u = pc.lda / UNIT_VALUES, ku = pc.K / UNIT_VALUES, a0 = offset_a(z) / UNIT_VALUES + row0 * lda_u;
  float acc[ROWS * SUMS];  // [row][column, then the ups']
  UNROLL for (uint i = 0; i < ROWS * SUMS; ++i) acc[i] = 0.0;

  const uint nb = pc.K / 32u, rows = SUMS / COLS * pc.N;
#if defined(Q_SUPER) && ROWS <= 2
  // A K-quant's super-block scales are fetched once per column for its 8 blocks (a
  // fetch a block was a fifth of the step). K is a multiple of 256 for these types.
#define SUPER_UNITS (256u / UNIT_VALUES)
  for (uint r0 = 0u; r0 < ku; r0 += SUPER_UNITS) {
    SuperScales ss[SUMS];
#if defined(PAIRED_ROWS) && defined(Q_HIGH_PAIRS)
    UNROLL for (uint c = 0; c < SUMS; c += 2u)  // (Q6_K: the pair's d share a word)
      super_scales_pair(rows_of_b[c], rows_of_b[c + 1u], r0 / SUPER_UNITS, rows, nb, ss[c], ss[c + 1u]);
#else
    UNROLL for (uint c = 0; c < SUMS; ++c) ss[c] = super_scales(rows_of_b[c], r0 / SUPER_UNITS, rows, nb);
#endif
    // Unrolled, so that each block's place in its super-block, and so where its scales lie
    // in ss, is a constant: indexed at run time they are selects on every lane's words.
    [[unroll]] for (uint rr = 0u; rr < SUPER_UNITS; rr += SG) {
      const uint r = r0 + rr;
#else
  for (uint r = 0u; r < ku; r += SG) {  // runs of SG units of A's rows
#endif
#if ROWS <= 2
    // The run's blocks' units are fetched first, before A's: on llvmpipe a texel fetch
    // is a call, and every vector live across it is saved and restored.
#define RUN_BLOCKS (SG * UNIT_VALUES / 32u)
    uint ats[RUN_BLOCKS][SUMS];  // each column's block's place (block_at)
    CodeUnits units[RUN_BLOCKS][SUMS];
    uvec4 high[RUN_BLOCKS][SUMS];  // the top bits' unit of each column (PAIRED_ROWS: of each pair, at its first)
    [[unroll]] for (uint j = 0u; j < RUN_BLOCKS; ++j) {
      const uint b = min(r * UNIT_VALUES / 32u + j, nb - 1u);
      UNROLL for (uint c = 0; c < SUMS; ++c) {
        const uint at = block_at(rows_of_b[c], b, rows, nb);
        ats[j][c] = at;
        units[j][c] = code_units(at);
#ifdef PAIRED_ROWS
        // Columns 2i and 2i + 1 are neighbouring rows (host: N even, rows interleaved),
        // so their blocks are neighbours, and their top bits share a unit.
        if (c % 2u == 0u) high[j][c] = block_high_unit(at, rows * nb);
#else
        high[j][c] = block_high_unit(at, rows * nb);
#endif
      }
    }
#endif
    uvec4 mine[ROWS];
    UNROLL for (uint m = 0; m < ROWS; ++m) mine[m] = ROW_USED(m) ? A_UNIT(a0 + m * lda_u + min(r + lane, ku - 1u)) : uvec4(0u);
#if ROWS <= 2
    // Each lane unpacks its unit and scales it for the codes' places (a_code_scale), and
    // sums it; the blocks below take these from their lanes.
    const uint unit_in_block = lane % (32u / UNIT_VALUES);
    const bool second_half = unit_in_block >= 16u / UNIT_VALUES;
    vec4 mine_scaled[ROWS][UNIT_VALUES / 4u];
    float mine_sum[ROWS];
    UNROLL for (uint m = 0; m < ROWS; ++m) {
      mine_sum[m] = 0.0;
      [[unroll]] for (uint p = 0u; p < UNIT_VALUES / 4u; ++p) {
        const vec4 v = unit_vec4(mine[m], p);
        mine_sum[m] += (v.x + v.y) + (v.z + v.w);
        mine_scaled[m][p] = v * a_code_scale(second_half);
      }
    }
#endif
    [[unroll]] for (uint j = 0u; j < SG * UNIT_VALUES / 32u; ++j) {  // the run's blocks
      const uint b = r * UNIT_VALUES / 32u + j;
      if (b >= nb) break;
#if ROWS > 2
      // Several rows: each column's block dequantized once into registers, then every
      // row's dot with it (A's values as they are, broadcast a row at a time).
      vec4 w[SUMS][8];
      UNROLL for (uint c = 0; c < SUMS; ++c) {
        const BlockRef ref = block_ref(rows_of_b[c], b, rows, nb);
        block_codes(ref, w[c]);
        const vec4 s = block_scales(ref);
        UNROLL for (uint i = 0u; i < 8u; ++i) w[c][i] = w[c][i] * (i < 4u ? s.x : s.z) + (i < 4u ? s.y : s.w);
      }
      UNROLL for (uint m = 0; m < ROWS; ++m) {
        if (!ROW_USED(m)) break;
        [[unroll]] for (uint u = 0u; u < 32u / UNIT_VALUES; ++u) {
          const uvec4 t = lane_value(mine[m], j * (32u / UNIT_VALUES) + u);
          [[unroll]] for (uint p = 0u; p < UNIT_VALUES / 4u; ++p) {
            const vec4 a = unit_vec4(t, p);
            const uint i = u * (UNIT_VALUES / 4u) + p;
            UNROLL for (uint c = 0; c < SUMS; ++c)
              acc[m * SUMS + c] += dot(a, w[c][i]);
          }
        }
      }
#else
      // One or two rows: the codes read in place against A's values scaled
      // (gemm_columns_blocks.glsl), A's work done once for the invocation's columns.
      BlockA ba[ROWS];  // the block's 32 values of each row
      UNROLL for (uint m = 0; m < ROWS; ++m) {
        vec4 a[8];
        vec2 halves = vec2(0.0);
        [[unroll]] for (uint u = 0u; u < 32u / UNIT_VALUES; ++u) {
          const uint at = j * (32u / UNIT_VALUES) + u;  // the lane that holds unit u
          [[unroll]] for (uint p = 0u; p < UNIT_VALUES / 4u; ++p)
            a[u * (UNIT_VALUES / 4u) + p] = lane_vec4(mine_scaled[m][p], at);
          const float part = lane_float(mine_sum[m], at);
          if (u < 16u / UNIT_VALUES) halves.x += part;
          else halves.y += part;
        }
        ba[m] = block_a(a, halves);
      }
      UNROLL for (uint c = 0; c < SUMS; ++c) {  // each column's block loaded once, for every row
#ifdef PAIRED_ROWS
        const uvec4 hu = high[j][c - c % 2u];
#else
        const uvec4 hu = high[j][c];
#endif
#if defined(PAIRED_ROWS) && defined(Q_HIGH_PAIRS)
        const uint place = c % 2u;  // (Q6_K: a unit holds the top bits of rows 2i and 2i + 1)
#else
        const uint place = ats[j][c] % Q_HIGH_SHARE;
#endif
#ifdef SUPER_UNITS
        const BlockCodes q = block_codes_in_place(units[j][c], place, sub_scales(ss[c], rr * UNIT_VALUES / 32u + j), hu);
#else
        const BlockCodes q = block_codes_in_place(units[j][c], place, block_scales(BlockRef(ats[j][c], rows_of_b[c], b, rows, nb)), hu);
#endif
        UNROLL for (uint m = 0; m < ROWS; ++m) acc[m * SUMS + c] += block_dot(ba[m], q);
      }
#endif
    }
#ifdef SUPER_UNITS
    }
#endif
  }
  UNROLL for (uint c = 0; c < COLS; ++c) {
    if (n0 + c >= pc.N) break;
    UNROLL for (uint m = 0; m < ROWS; ++m) {
      if (!ROW_USED(m)) break;
#ifdef GLU
      store_glu(z, row0 + m, n0 + c, acc[m * SUMS + c], acc[m * SUMS + COLS + c]);
#else
      store_c(z, row0 + m, n0 + c, acc[m * SUMS + c]);
#endif
    }
  }
}
