// B as a Linear weight [rows, K] in llama.cpp's blocks (host: Gemm::b_blocks), as
// lib/ops/block_weights.cpp lays them out on the device: three regions of 32-bit words,
// each starting on 16 bytes, so that a block's codes are whole 16-byte loads:
//   codes   per block (row r, block b: index r * K / 32 + b) Q_CODE_WORDS words: Q8_0's 32
//           int8 codes (8 words), or the 4- and 5-bit types' 16 bytes of nibbles as
//           llama.cpp packs them (byte j: code j low, code j + 16 high; 4 words)
//   qh      Q_HIGH_BIT (Q5_0, Q5_1): a word per block, bit j code j's fifth bit
//   scales  Q_MIN (Q4_1, Q5_1): a word per block, (d, m) as two halves; else d as a half,
//           two blocks to a word
// A value is d (code - Q_OFFSET) (+ m).
// Blocks (and their qh words and scales) are in the order of block_at: row-major, or with
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
uint q_qh_at(uint blocks) { return q_align4(blocks * Q_CODE_WORDS); }
uint q_scales_at(uint blocks) {
#ifdef Q_HIGH_BIT
  return q_align4(q_qh_at(blocks) + blocks);
#else
  return q_qh_at(blocks);
#endif
}

// (d, m) of block `blk` of `blocks` (m 0 for the types without one).
vec2 block_scale(uint blk, uint blocks) {
#ifdef Q_MIN
  return unpackHalf2x16(bq_word(q_scales_at(blocks) + blk));
#else
  return vec2(unpackHalf2x16(bq_word(q_scales_at(blocks) + blk / 2u))[blk & 1u], 0.0);
#endif
}

// The block's 32 codes, less Q_OFFSET, as q[i] = codes 4i .. 4i + 3.
void block_codes(uint blk, uint blocks, out vec4 q[8]) {
#if Q_CODE_WORDS == 8
  UNROLL for (uint u = 0u; u < 2u; ++u) {
    const uvec4 w = bq_unit(blk * 2u + u);
    UNROLL for (uint i = 0u; i < 4u; ++i)
      q[u * 4u + i] = vec4(bitfieldExtract(int(w[i]), 0, 8), bitfieldExtract(int(w[i]), 8, 8),
                           bitfieldExtract(int(w[i]), 16, 8), bitfieldExtract(int(w[i]), 24, 8));
  }
#else
  const uvec4 w = bq_unit(blk);
#ifdef Q_HIGH_BIT
  const uint qh = bq_word(q_qh_at(blocks) + blk);
#endif
  UNROLL for (uint i = 0u; i < 4u; ++i) {
    const uvec4 bytes = uvec4(w[i], w[i] >> 8u, w[i] >> 16u, w[i] >> 24u);
    uvec4 lo = bytes & 0xFu, hi = (bytes >> 4u) & 0xFu;
#ifdef Q_HIGH_BIT
    lo |= ((uvec4(qh) >> uvec4(4u * i, 4u * i + 1u, 4u * i + 2u, 4u * i + 3u)) & 1u) << 4u;
    hi |= ((uvec4(qh) >> uvec4(16u + 4u * i, 17u + 4u * i, 18u + 4u * i, 19u + 4u * i)) & 1u) << 4u;
#endif
    q[i] = vec4(lo) - Q_OFFSET;
    q[i + 4u] = vec4(hi) - Q_OFFSET;
  }
#endif
}

// Value k of row `row` (Q_ROW_VALUES a row: the GEMMs' K), one at a time: the kernels
// without subgroups, the embedding lookup.
#ifndef Q_ROW_VALUES
#define Q_ROW_VALUES pc.K
#endif
float block_value(uint row, uint k, uint blocks) {
  const uint nb = Q_ROW_VALUES / 32u, blk = block_at(row, k / 32u, blocks / nb, nb), j = k % 32u;
  const vec2 dm = block_scale(blk, blocks);
#if Q_CODE_WORDS == 8
  const float code = float(bitfieldExtract(int(bq_word(blk * 8u + j / 4u)), int(8u * (j % 4u)), 8));
#else
  const uint byte = j % 16u;
  uint c = (bq_word(blk * 4u + byte / 4u) >> (8u * (byte % 4u) + (j < 16u ? 0u : 4u))) & 0xFu;
#ifdef Q_HIGH_BIT
  c |= ((bq_word(q_qh_at(blocks) + blk) >> j) & 1u) << 4u;
#endif
  const float code = float(c);
#endif
  precise float v = dm.x * (code - Q_OFFSET);  // rounded as the host's dequantize_blocks
#ifdef Q_MIN
  v = v + dm.y;
#endif
  return v;
}

#endif
