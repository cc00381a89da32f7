// gemm_columns.comp's dot product of one block of A's row (32 values) with one block of
// a weight in llama.cpp's blocks (blocks.glsl's device layout).
//
// A code is read where it lies in its 32-bit word, not shifted down: (w & 0xF << 4p)
// converts exactly to code * 2^4p, so A's value for it is taken times 2^-4p instead
// (powers of two: exact). That is one AND and one conversion a code where shifting
// takes three operations, and the scaling is done once per subgroup, for COLS columns.
// The word's top code is shifted down (a conversion of bit 31 would be signed). Q8_0's
// signed bytes are made unsigned (XOR 0x80: code + 128) and the offset taken back with
// A's sum, as the other types' offsets are.
//
// The 5- and 6-bit types (Q_JOINED): a nibble word's four low (or high) nibbles are
// masked into bytes, and each code's top bit (pair) is OR-ed in beside its nibble from
// where the layout keeps it (one shift a word), so four whole codes lie a byte each and
// are converted where they lie: about four operations a code, where reading the top bits
// apart (an AND, a conversion and a multiply-add more) took six.

#ifndef VKF_GEMM_COLUMNS_BLOCKS_GLSL
#define VKF_GEMM_COLUMNS_BLOCKS_GLSL

#if defined(Q_HIGH_BIT) || defined(Q_HIGH_PAIRS)
#define Q_JOINED
#endif

struct BlockA {
  vec4 v[8];     // A's values in the order of the codes' bits, each times 2^-(its code's shift)
  float sum;     // of the block's 32 values
  vec2 halves;  // of values 0-15 and 16-31 (Q6_K: a scale each)
};

#if Q_CODE_WORDS == 8
#define Q_CODE_OFFSET (Q_OFFSET + 128.0)  // the codes made unsigned
#else
#define Q_CODE_OFFSET Q_OFFSET
#endif

// The factors of A's values 4k .. 4k + 3 of a block (k < 4: the block's first half)
// that undo their codes' places in the words (powers of two: exact). The lane that
// loaded A's values scales them, once for every lane (gemm_columns.comp).
vec4 a_code_scale(bool second_half) {
#if defined(Q_JOINED)
  // v[2i + h] holds codes 4i + b + 16h (b = 0..3), whole, a byte each (joined in
  // block_codes_in_place), so A's values times 2^-8b.
  return vec4(1.0, 1.0 / 256.0, 1.0 / 65536.0, 1.0 / 16777216.0);
#elif Q_CODE_WORDS == 8
  // Word i holds codes 4i .. 4i + 3, a byte each (the top one shifted down).
  return vec4(1.0, 1.0 / 256.0, 1.0 / 65536.0, 1.0);
#else
  // Word i holds bytes 4i .. 4i + 3; byte j's low nibble is code j, its high code j + 16
  // (the word's top code shifted down).
  return second_half ? vec4(1.0 / 16.0, 1.0 / 4096.0, 1.0 / 1048576.0, 1.0)
                     : vec4(1.0, 1.0 / 256.0, 1.0 / 65536.0, 1.0 / 16777216.0);
#endif
}

// s[k]: values 4k .. 4k + 3 of the block times a_code_scale; halves: the sums of values
// 0-15 and 16-31 as they are.
BlockA block_a(vec4 s[8], vec2 halves) {
  BlockA ba;
  ba.halves = halves;
  ba.sum = halves.x + halves.y;
#if defined(Q_JOINED)
  [[unroll]] for (uint i = 0u; i < 4u; ++i) ba.v[2u * i] = s[i], ba.v[2u * i + 1u] = s[4u + i];
#elif Q_CODE_WORDS == 8
  ba.v = s;
#else
  // In the order of the word's codes: code 4i (x), 4i + 16 (y), 4i + 1 (z), 4i + 17 (w), then 4i + 2 ...
  [[unroll]] for (uint i = 0u; i < 4u; ++i) {
    ba.v[2u * i] = vec4(s[i].x, s[4u + i].x, s[i].y, s[4u + i].y);
    ba.v[2u * i + 1u] = vec4(s[i].z, s[4u + i].z, s[i].w, s[4u + i].w);
  }
#endif
  return ba;
}

// A block of the weight: its codes where they lie (converted as described above) with
// its scales dm (block_scales), loaded once for every row of A.
struct BlockCodes {
  vec4 v[8];  // in the order of BlockA::v
  vec4 dm;    // (d, m) of values 0-15, of 16-31
};

#ifdef Q_JOINED
// The blocks whose top bits share a 16-byte unit (Q_HIGH_WORDS words a block).
#define Q_HIGH_SHARE (4u / Q_HIGH_WORDS)
// The unit that holds block blk's top bits (and its neighbours').
uvec4 block_high_unit(uint blk, uint blocks) { return bq_unit(q_qh_at(blocks) / 4u + blk / Q_HIGH_SHARE); }
#else
#define Q_HIGH_SHARE 1u
uvec4 block_high_unit(uint blk, uint blocks) { return uvec4(0u); }
#endif

// units: code_units(blk); hu: block_high_unit(blk) (a lane's columns 2i and 2i + 1, neighbouring
// blocks, fetch it once); place: blk % Q_HIGH_SHARE, its part of hu.
BlockCodes block_codes_in_place(CodeUnits units, uint place, vec4 dm, uvec4 hu) {
  BlockCodes q;
#if Q_CODE_WORDS == 8
  [[unroll]] for (uint u = 0u; u < 2u; ++u) {
    const uvec4 w = units.u[u] ^ 0x80808080u;
    [[unroll]] for (uint i = 0u; i < 4u; ++i)
      q.v[u * 4u + i] = vec4(ivec4(w[i] & uvec4(0xFFu, 0xFF00u, 0xFF0000u, 0u)) | ivec4(0, 0, 0, int(w[i] >> 24u)));
  }
#elif defined(Q_JOINED)
  const uvec4 w = units.u[0];
#ifdef Q_HIGH_PAIRS
  // Q6_K: code 4i + b + 16h's pair at bit 8b + 2i of word h: shifted by 4 - 2i to 8b + 4.
  const uint h[2] = uint[2](place == 0u ? hu.x : hu.z, place == 0u ? hu.y : hu.w);
#define Q_TOP(i, half_) (((i) < 2u ? h[half_] << (4u - 2u * (i)) : h[half_] >> (2u * (i) - 4u)) & 0x30303030u)
#define Q_CODE_MASK 0x3Fu
#else
  // The 5-bit types: code 4i + b + 16h's fifth bit at bit 8b + 4h + i: shifted to 8b + 4.
  const uint qh = hu[place];
#define Q_TOP(i, half_) (((half_) == 0u ? qh << (4u - (i)) : qh >> (i)) & 0x10101010u)
#define Q_CODE_MASK 0x1Fu
#endif
  [[unroll]] for (uint i = 0u; i < 4u; ++i)
    [[unroll]] for (uint half_ = 0u; half_ < 2u; ++half_) {
      const uint x = ((w[i] >> (4u * half_)) & 0x0F0F0F0Fu) | Q_TOP(i, half_);
      q.v[2u * i + half_] = vec4(ivec4(uvec4(x) & (uvec4(Q_CODE_MASK) << uvec4(0u, 8u, 16u, 24u))));
    }
#undef Q_TOP
#undef Q_CODE_MASK
#else
  const uvec4 w = units.u[0];
  [[unroll]] for (uint i = 0u; i < 4u; ++i) {
    q.v[2u * i] = vec4(ivec4(w[i] & uvec4(0xFu, 0xF0u, 0xF00u, 0xF000u)));
    q.v[2u * i + 1u] = vec4(ivec4(w[i] & uvec4(0xF0000u, 0xF00000u, 0xF000000u, 0u)) | ivec4(0, 0, 0, int(w[i] >> 28u)));
  }
#endif
  q.dm = dm;
  return q;
}

// A's block dotted with the weight's, scaled: the block's share of a sum over K.
float block_dot(BlockA ba, BlockCodes q) {
#ifdef Q_HIGH_PAIRS
  // Q6_K: values 0-15 and 16-31 have a scale each; v[2i] holds codes of the first half,
  // v[2i + 1] of the second.
  vec2 s = vec2(0.0);
  [[unroll]] for (uint i = 0u; i < 4u; ++i) s += vec2(dot(q.v[2u * i], ba.v[2u * i]), dot(q.v[2u * i + 1u], ba.v[2u * i + 1u]));
  return q.dm.x * (s.x - Q_CODE_OFFSET * ba.halves.x) + q.dm.z * (s.y - Q_CODE_OFFSET * ba.halves.y);
#else
  float s = 0.0;
  [[unroll]] for (uint i = 0u; i < 8u; ++i) s += dot(q.v[i], ba.v[i]);
  return q.dm.x * (s - Q_CODE_OFFSET * ba.sum) + q.dm.y * ba.sum;
#endif
}

#endif
