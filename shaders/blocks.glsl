// B as a Linear weight [rows, K] in llama.cpp's blocks (host: Gemm::b_blocks), as
// lib/ops/block_weights.cpp lays them out on the device: three regions of 32-bit words,
// each starting on 16 bytes, so that a block's codes are whole 16-byte loads:
//   codes   per block of 32 values (row r, block b: index r * K / 32 + b) Q_CODE_WORDS
//           words: Q8_0's 32 int8 codes (8 words), or the other types' 16 bytes of low
//           nibbles as llama.cpp packs its 32-value types' (byte j: code j low, code
//           j + 16 high; 4 words; the K-quants' repacked so at upload)
//   qh      Q_HIGH_BIT (Q5_0, Q5_1, Q5_K): a word per block, code j's fifth bit at bit
//           8 (j % 4) + 4 (j / 16) + j % 16 / 4 (llama.cpp's bit j, moved at upload so
//           that one shift a word puts the bits beside their nibbles' bytes:
//           gemm_columns_blocks.glsl);
//           Q_HIGH_PAIRS (Q6_K): two words, code j's top two bits in the first (codes
//           0-15) or the second (16-31) at bit 8 (j % 4) + 2 (j % 16 / 4): shifted by
//           4 - 2 (j % 16 / 4), the pairs of a nibble word's four codes sit just above
//           their nibbles' bytes (gemm_columns_blocks.glsl)
//   scales  Q_MIN (Q4_1, Q5_1): a word per block, (d, m) as two halves; Q8_0, Q4_0, Q5_0:
//           d as a half, two blocks to a word; Q_SUPER (K-quants): 16 bytes a super-block
//           of 8 blocks (Q4_K, Q5_K: d, dmin and the 12 bytes of 6-bit scales and mins as
//           llama.cpp has them; Q6_K: its 16 int8 scales, one per 16 values, then each
//           super-block's d as a half, two to a word)
// A value is d (code - Q_OFFSET) + m (block_scales: m 0 without a minimum; a K-quant's
// d and m its sub-block's, d sc and -dmin m).
// Blocks (and their qh words and scales; super-blocks as blocks of K / 256) are in the order of block_at: row-major, or with
// Q_INTERLEAVE (host: CPU drivers, 16) the rows in groups of that many, each group's
// blocks by block then row, so that invocations that own neighbouring rows and walk K
// together (gemm_columns.comp) read one run of memory instead of a stream per row.
#ifndef VKF_BLOCKS_GLSL
#define VKF_BLOCKS_GLSL

#ifndef QTYPE  // (compiled alone, as the shader tests do: Q8_0's)
#define QTYPE 0
#define Q_CODE_WORDS 8
#define Q_OFFSET 0.0
#endif
#ifndef BLOCKS_BINDING
#define BLOCKS_BINDING 1  // the GEMMs' B
#endif
#ifdef TEXEL_B
layout(set = 0, binding = BLOCKS_BINDING, rgba32ui) uniform restrict readonly uimageBuffer Bq_texels;
uvec4 bq_unit(uint i) { return imageLoad(Bq_texels, int(i)); }
#else
layout(std430, set = 0, binding = BLOCKS_BINDING) readonly buffer BlockUnits { uvec4 Bq4[]; };
uvec4 bq_unit(uint i) { return Bq4[i]; }
#endif
uint bq_word(uint i) { return bq_unit(i >> 2u)[i & 3u]; }

#ifndef Q_INTERLEAVE
#define Q_INTERLEAVE 1u
#endif
// Where block b of row `row` lies, in a weight of `rows` rows of nb blocks.
uint block_at(uint row, uint b, uint rows, uint nb) {
  const uint first = row - row % Q_INTERLEAVE;  // the row group's first row
  return first * nb + b * min(Q_INTERLEAVE, rows - first) + (row - first);
}

uint q_align4(uint words) { return (words + 3u) & ~3u; }
#if defined(Q_HIGH_PAIRS)
#define Q_HIGH_WORDS 2u
#elif defined(Q_HIGH_BIT)
#define Q_HIGH_WORDS 1u
#else
#define Q_HIGH_WORDS 0u
#endif
uint q_qh_at(uint blocks) { return q_align4(blocks * Q_CODE_WORDS); }
uint q_scales_at(uint blocks) { return q_align4(q_qh_at(blocks) + blocks * Q_HIGH_WORDS); }

// Block b (32 values) of row `row`, in a weight of `rows` rows of nb blocks.
struct BlockRef {
  uint at;  // block_at: its codes, qh and (32-value types) scale
  uint row, b, rows, nb;
};
BlockRef block_ref(uint row, uint b, uint rows, uint nb) { return BlockRef(block_at(row, b, rows, nb), row, b, rows, nb); }

#ifdef Q_SUPER
// A K-quant super-block's scales (8 blocks): its 16 bytes, and Q6_K's d.
struct SuperScales {
  uvec4 u;
  float d;  // Q6_K's (Q4_K and Q5_K keep d and dmin in u[0])
};
#if defined(Q_HIGH_PAIRS)
// The word that holds Q6_K super-block `at`'s d (and its neighbour's), of `blocks` blocks.
uint q6_d_word(uint blocks, uint at) { return q_scales_at(blocks) + blocks / 2u + at / 2u; }
#endif
SuperScales super_scales(uint row, uint sb, uint rows, uint nb) {
  const uint blocks = rows * nb, sat = block_at(row, sb, rows, nb >> 3u);  // (block_at's order of super-blocks)
  SuperScales s;
  s.u = bq_unit(q_scales_at(blocks) / 4u + sat);
#if defined(Q_HIGH_PAIRS)  // Q6_K: 16 int8 scales; d after the scales, two to a word
  s.d = unpackHalf2x16(bq_word(q6_d_word(blocks, sat)))[sat & 1u];
#else
  s.d = 0.0;
#endif
  return s;
}
#if defined(Q_HIGH_PAIRS)
// Q6_K's scales of rows `row` and `next` (row + 1 with row even, or row itself): block_at
// keeps neighbouring rows' super-blocks neighbours, so their d share a word, fetched once.
void super_scales_pair(uint row, uint next, uint sb, uint rows, uint nb, out SuperScales first, out SuperScales second) {
  const uint blocks = rows * nb, at = block_at(row, sb, rows, nb >> 3u), at_next = block_at(next, sb, rows, nb >> 3u);
  const vec2 d = unpackHalf2x16(bq_word(q6_d_word(blocks, at)));
  first.u = bq_unit(q_scales_at(blocks) / 4u + at);
  second.u = bq_unit(q_scales_at(blocks) / 4u + at_next);
  first.d = d[at & 1u];
  second.d = d[at_next & 1u];
}
#endif
// (d, m) of values 0-15, then 16-31 of the super-block's block j (0-7).
vec4 sub_scales(SuperScales s, uint j) {
  const uvec4 u = s.u;
#if defined(Q_HIGH_PAIRS)
  const uint w = u[j >> 1u] >> (16u * (j & 1u));
  return vec4(s.d * float(bitfieldExtract(int(w), 0, 8)), 0.0, s.d * float(bitfieldExtract(int(w), 8, 8)), 0.0);
#else  // Q4_K, Q5_K: d, dmin, then 12 bytes of 6-bit (scale, min) pairs
  const vec2 dm = unpackHalf2x16(u[0]);
#define Q_SCALE_BYTE(k) ((u[1u + (k) / 4u] >> (8u * ((k) % 4u))) & 0xFFu)
  uint sc, m;
  if (j < 4u) {
    sc = Q_SCALE_BYTE(j) & 63u, m = Q_SCALE_BYTE(j + 4u) & 63u;
  } else {
    sc = (Q_SCALE_BYTE(j + 4u) & 0xFu) | ((Q_SCALE_BYTE(j - 4u) >> 6u) << 4u);
    m = (Q_SCALE_BYTE(j + 4u) >> 4u) | ((Q_SCALE_BYTE(j) >> 6u) << 4u);
  }
#undef Q_SCALE_BYTE
  const vec2 d = vec2(dm.x * float(sc), -(dm.y * float(m)));  // exact: an fp16 times 6 bits
  return d.xyxy;
#endif
}
#endif

// (d, m) of the block's values 0-15, then of 16-31 (different only for Q6_K, whose
// sub-blocks are 16 values): value = d (code - Q_OFFSET) + m.
vec4 block_scales(BlockRef r) {
#ifdef Q_SUPER
  return sub_scales(super_scales(r.row, r.b >> 3u, r.rows, r.nb), r.b & 7u);
#elif defined(Q_MIN)
  return unpackHalf2x16(bq_word(q_scales_at(r.rows * r.nb) + r.at)).xyxy;
#else
  return vec4(unpackHalf2x16(bq_word(q_scales_at(r.rows * r.nb) + r.at / 2u))[r.at & 1u], 0.0, 0.0, 0.0).xyxy;
#endif
}

// The 16-byte units of the codes of block `at` (block_at).
struct CodeUnits {
  uvec4 u[Q_CODE_WORDS / 4u];
};
CodeUnits code_units(uint at) {
  CodeUnits units;
  UNROLL for (uint u = 0u; u < Q_CODE_WORDS / 4u; ++u) units.u[u] = bq_unit(at * (Q_CODE_WORDS / 4u) + u);
  return units;
}

// The block's 32 codes, less Q_OFFSET, as q[i] = codes 4i .. 4i + 3.
void block_codes(BlockRef r, out vec4 q[8]) {
  const CodeUnits units = code_units(r.at);
#if Q_CODE_WORDS == 8
  UNROLL for (uint u = 0u; u < 2u; ++u) {
    const uvec4 w = units.u[u];
    UNROLL for (uint i = 0u; i < 4u; ++i)
      q[u * 4u + i] = vec4(bitfieldExtract(int(w[i]), 0, 8), bitfieldExtract(int(w[i]), 8, 8),
                           bitfieldExtract(int(w[i]), 16, 8), bitfieldExtract(int(w[i]), 24, 8));
  }
#else
  const uvec4 w = units.u[0];
#if defined(Q_HIGH_BIT)
  const uint qh = bq_word(q_qh_at(r.rows * r.nb) + r.at);
#elif defined(Q_HIGH_PAIRS)
  const uint h0 = bq_word(q_qh_at(r.rows * r.nb) + 2u * r.at), h1 = bq_word(q_qh_at(r.rows * r.nb) + 2u * r.at + 1u);
#endif
  UNROLL for (uint i = 0u; i < 4u; ++i) {
    const uvec4 bytes = uvec4(w[i], w[i] >> 8u, w[i] >> 16u, w[i] >> 24u);
    uvec4 lo = bytes & 0xFu, hi = (bytes >> 4u) & 0xFu;
#if defined(Q_HIGH_BIT)
    const uvec4 at = uvec4(i, 8u + i, 16u + i, 24u + i);  // codes 4i .. 4i + 3 (+ 16: 4 more)
    lo |= ((uvec4(qh) >> at) & 1u) << 4u;
    hi |= ((uvec4(qh) >> (at + 4u)) & 1u) << 4u;
#elif defined(Q_HIGH_PAIRS)
    const uvec4 at = uvec4(2u * i, 8u + 2u * i, 16u + 2u * i, 24u + 2u * i);  // codes 4i .. 4i + 3 (+ 16)
    lo |= ((uvec4(h0) >> at) & 3u) << 4u;
    hi |= ((uvec4(h1) >> at) & 3u) << 4u;
#endif
    q[i] = vec4(lo) - Q_OFFSET;
    q[i + 4u] = vec4(hi) - Q_OFFSET;
  }
#endif
}

// A block's words held in registers (its codes, fifth bits or top pairs, scales), from
// which block_vec4 dequantizes values 4u .. 4u + 3 one vec4 at a time: kernels that walk
// K a vec4 at a time (the direct GEMM) keep a few words a column, not 32 values.
struct BlockRegs {
  CodeUnits c;
  uint h0, h1;
  vec4 s;
};
BlockRegs block_regs(BlockRef r) {
  BlockRegs b;
  b.c = code_units(r.at);
  b.h0 = b.h1 = 0u;
#if defined(Q_HIGH_BIT)
  b.h0 = bq_word(q_qh_at(r.rows * r.nb) + r.at);
#elif defined(Q_HIGH_PAIRS)
  b.h0 = bq_word(q_qh_at(r.rows * r.nb) + 2u * r.at), b.h1 = bq_word(q_qh_at(r.rows * r.nb) + 2u * r.at + 1u);
#endif
  b.s = block_scales(r);
  return b;
}
vec4 block_vec4(BlockRegs b, uint u) {
  vec4 q;
#if Q_CODE_WORDS == 8
  const uint w = b.c.u[u / 4u][u % 4u];
  q = vec4(bitfieldExtract(int(w), 0, 8), bitfieldExtract(int(w), 8, 8), bitfieldExtract(int(w), 16, 8),
           bitfieldExtract(int(w), 24, 8));
#else
  // Codes 4u .. 4u + 3: the low nibbles of word u (u < 4), else the high nibbles of word u - 4.
  const uint w = b.c.u[0][u % 4u] >> (u < 4u ? 0u : 4u);
  uvec4 c = uvec4(w, w >> 8u, w >> 16u, w >> 24u) & 0xFu;
#if defined(Q_HIGH_BIT)
  const uint i = (u % 4u) + (u < 4u ? 0u : 4u);
  c |= ((uvec4(b.h0) >> uvec4(i, 8u + i, 16u + i, 24u + i)) & 1u) << 4u;
#elif defined(Q_HIGH_PAIRS)
  const uint h = u < 4u ? b.h0 : b.h1, i2 = 2u * (u % 4u);
  c |= ((uvec4(h) >> uvec4(i2, 8u + i2, 16u + i2, 24u + i2)) & 3u) << 4u;
#endif
  q = vec4(c) - Q_OFFSET;
#endif
  return u < 4u ? q * b.s.x + b.s.y : q * b.s.z + b.s.w;
}

// Values k .. k + 3 of row `row` (k a multiple of 4) of a weight of `rows` rows of nb
// blocks, dequantized: the tiled and cooperative-matrix kernels' op(B) tiles, a vec4 at
// a time (a GPU's caches serve the block's words to its eight vec4s' loads).
vec4 block_row_vec4(uint row, uint k, uint rows, uint nb) {
  return block_vec4(block_regs(block_ref(row, k / 32u, rows, nb)), (k % 32u) / 4u);
}

// Value k of row `row` (Q_ROW_VALUES a row: the GEMMs' K), one at a time: the kernels
// without subgroups, the embedding lookup.
#ifndef Q_ROW_VALUES
#define Q_ROW_VALUES pc.K
#endif
float block_value(uint row, uint k, uint blocks) {
  const uint nb = Q_ROW_VALUES / 32u, j = k % 32u;
  const BlockRef r = block_ref(row, k / 32u, blocks / nb, nb);
  const vec4 s = block_scales(r);
  vec4 q[8];
  block_codes(r, q);
  const vec2 dm = j < 16u ? s.xy : s.zw;
  precise float v = dm.x * q[j / 4u][j % 4u];  // rounded as the host's dequantize_blocks
#ifdef Q_MIN
  v = v + dm.y;
#endif
  return v;
}

#endif
