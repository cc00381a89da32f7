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
// The 16-byte unit that holds block blk's top bits (and its neighbours': Q_HIGH_WORDS a block).
uvec4 block_high_unit(uint blk, uint blocks) { return bq_unit(q_qh_at(blocks) / 4u + blk / (4u / Q_HIGH_WORDS)); }
#else
uvec4 block_high_unit(uint blk, uint blocks) { return uvec4(0u); }
#endif

#ifdef Q_JOINED
#ifdef Q_HIGH_PAIRS
#define Q_CODE_MASK 0x3Fu
#else
#define Q_CODE_MASK 0x1Fu
#endif
// Codes 4i + b + 16 half_ (b = 0..3) of block blk, whole, a byte each: nibble word w
// (the block's word i) with the top bits from hu (block_high_unit) beside its nibbles.
uint joined_codes(uint w, uvec4 hu, uint blk, uint i, uint half_) {
#ifdef Q_HIGH_PAIRS
  // Q6_K: code 4i + b + 16h's pair at bit 8b + 2i of word h: shifted by 4 - 2i to 8b + 4.
  const uint h = (blk & 1u) == 0u ? hu[half_] : hu[2u + half_];
  const uint top = (i < 2u ? h << (4u - 2u * i) : h >> (2u * i - 4u)) & 0x30303030u;
#else
  // The 5-bit types: code 4i + b + 16h's fifth bit at bit 8b + 4h + i: shifted to 8b + 4.
  const uint qh = hu[blk % 4u];
  const uint top = (half_ == 0u ? qh << (4u - i) : qh >> i) & 0x10101010u;
#endif
  return ((w >> (4u * half_)) & 0x0F0F0F0Fu) | top;
}
#endif

// hu: block_high_unit(r.at) (two columns a lane, neighbouring blocks, fetch it once).
BlockCodes block_codes_in_place(BlockRef r, vec4 dm, uvec4 hu) {
  BlockCodes q;
  const uint blk = r.at, blocks = r.rows * r.nb;
#if Q_CODE_WORDS == 8
  [[unroll]] for (uint u = 0u; u < 2u; ++u) {
    const uvec4 w = bq_unit(blk * 2u + u) ^ 0x80808080u;
    [[unroll]] for (uint i = 0u; i < 4u; ++i)
      q.v[u * 4u + i] = vec4(ivec4(w[i] & uvec4(0xFFu, 0xFF00u, 0xFF0000u, 0u)) | ivec4(0, 0, 0, int(w[i] >> 24u)));
  }
#elif defined(Q_JOINED)
  const uvec4 w = bq_unit(blk);
  const uint mask = Q_CODE_MASK;
  [[unroll]] for (uint i = 0u; i < 4u; ++i)
    [[unroll]] for (uint half_ = 0u; half_ < 2u; ++half_)
      q.v[2u * i + half_] = vec4(ivec4(uvec4(joined_codes(w[i], hu, blk, i, half_)) & (uvec4(mask) << uvec4(0u, 8u, 16u, 24u))));
#else
  const uvec4 w = bq_unit(blk);
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

#ifdef A_PAIRS
// With A rounded to 8 bits (A_PAIRS: the decode step over fp16 A), a block's dot product
// is summed in integers, two codes to a 32-bit multiply: for codes c, c' and A's values
// a, a' (8-bit, signed), (c + 65536 c') (a' + 65536 a) = c a' + 65536 (c a + c' a') +
// 2^32 c' a', so the multiply's top half holds the pair's products summed, and the
// bottom half's c a' stays below 2^15 over a group of products (eight of 4-bit codes,
// two of 6-bit ones: |a| <= 127), which 32768 added first keeps from borrowing. About
// two operations a code, where converting and multiplying in floats takes four.

// A lane's unit of fp16 A (values 8u .. 8u + 7 of a block, u = lane % 4): the block's
// scale (its largest magnitude over 127, from its four lanes), the values rounded on it
// packed in pairs (k + 2, k) as a + 65536 a' for k = the unit's 4i and 4i + 1 (i =
// 2u % 4 and the next), and their sum with the other lane of their half of the block.
void a_pairs(uvec4 unit, out uvec4 pairs, out uvec2 scale) {
  const vec4 lo = vec4(unpackHalf2x16(unit.x), unpackHalf2x16(unit.y)), hi = vec4(unpackHalf2x16(unit.z), unpackHalf2x16(unit.w));
  const vec4 most = max(abs(lo), abs(hi));
  float block_max = max(max(most.x, most.y), max(most.z, most.w));
  block_max = max(block_max, subgroupShuffleXor(block_max, 1u));
  block_max = max(block_max, subgroupShuffleXor(block_max, 2u));
  const float to_codes = block_max > 0.0 ? 127.0 / block_max : 0.0;
  // Rounded half to even by adding 1.5 2^23 (the sum's last place is 1), read from its bits.
  precise const vec4 r0 = lo * to_codes + 12582912.0, r1 = hi * to_codes + 12582912.0;
  const ivec4 q0 = floatBitsToInt(r0) - 0x4B400000, q1 = floatBitsToInt(r1) - 0x4B400000;
  pairs = uvec4(ivec4(q0.zw, q1.zw)) + (uvec4(ivec4(q0.xy, q1.xy)) << 16u);
  int sum = (q0.x + q0.y) + (q0.z + q0.w) + (q1.x + q1.y) + (q1.z + q1.w);
  sum += subgroupShuffleXor(sum, 1u);
  scale = uvec2(floatBitsToUint(block_max / 127.0), uint(sum));
}

// A's block in 8 bits, as block_dot_pairs reads it.
struct BlockPairs {
  uvec4 y[4];   // y[i][p]: the pair at k = 4i, 4i + 16, 4i + 1, 4i + 17 (p = 0..3)
  float scale;  // of the 8-bit values
  ivec2 sums;   // of values 0-15, 16-31 (8-bit)
};
// t[u]: a_pairs of the block's unit u (values 8u .. 8u + 7).
BlockPairs block_pairs(uvec4 t[4], float scale, ivec2 sums) {
  BlockPairs a;
  [[unroll]] for (uint i = 0u; i < 4u; ++i) {
    const uvec4 first = t[i / 2u], second = t[i / 2u + 2u];  // values 0-15's unit, 16-31's
    const uint at = 2u * (i % 2u);
    a.y[i] = uvec4(first[at], second[at], first[at + 1u], second[at + 1u]);
  }
  a.scale = scale;
  a.sums = sums;
  return a;
}

// The block's share of a sum over K with A's block in 8 bits; hu and dm as for
// block_codes_in_place.
float block_dot_pairs(BlockPairs a, BlockRef r, uvec4 hu, vec4 dm) {
  const uvec4 w = bq_unit(r.at);
  ivec2 s = ivec2(0);  // codes times A's 8-bit values, over values 0-15 and 16-31 (Q6_K) or all
#if defined(Q_JOINED)
  // Bytes 0 and 2 of a joined word are codes k, k + 2 (k = 4i + 16h), bytes 1 and 3 k + 1, k + 3.
  [[unroll]] for (uint i = 0u; i < 4u; ++i)
    [[unroll]] for (uint h = 0u; h < 2u; ++h) {
      const uint x = joined_codes(w[i], hu, r.at, i, h);
      const uint g = 32768u + (x & 0x00FF00FFu) * a.y[i][h] + ((x >> 8u) & 0x00FF00FFu) * a.y[i][2u + h];
      s[h] += int(g) >> 16;
    }
#else
  // Nibbles 0 and 4 of a word shifted by 4p are codes k, k + 2 (k as for y[i][p]).
  uint g0 = 32768u, g1 = 32768u;
  [[unroll]] for (uint i = 0u; i < 4u; ++i) {
    g0 += (w[i] & 0x000F000Fu) * a.y[i].x + ((w[i] >> 4u) & 0x000F000Fu) * a.y[i].y;
    g1 += ((w[i] >> 8u) & 0x000F000Fu) * a.y[i].z + ((w[i] >> 12u) & 0x000F000Fu) * a.y[i].w;
  }
  s.x = (int(g0) >> 16) + (int(g1) >> 16);
#endif
#ifdef Q_HIGH_PAIRS
  return a.scale * (dm.x * (float(s.x) - Q_OFFSET * float(a.sums.x)) + dm.z * (float(s.y) - Q_OFFSET * float(a.sums.y)));
#else
  const float codes = float(s.x + s.y), values = float(a.sums.x + a.sums.y);
  return a.scale * (dm.x * (codes - Q_OFFSET * values) + dm.y * values);
#endif
}
#endif

#endif
