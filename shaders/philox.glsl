// Philox4x32-10 (Salmon, Moraes, Dror and Shaw, "Parallel random numbers: as easy as
// 1, 2, 3", SC 2011): a counter-based generator, 128 random bits from a 128-bit counter
// and a 64-bit key. Every (key, counter) pair, zeros included, gives an output
// indistinguishable from random (it passes TestU01's BigCrush), unlike a chain of
// integer hashes, whose fixed point at zero made seed 0, row 0, step 0 draw r = 0.
// The host reference with the published known-answer vectors: tests/ops/sample_test.cpp.
#ifndef VKF_PHILOX_GLSL
#define VKF_PHILOX_GLSL

uvec4 philox4x32_10(uvec4 counter, uvec2 key) {
  for (int round = 0; round < 10; ++round) {
    uint hi0, lo0, hi1, lo1;
    umulExtended(0xD2511F53u, counter.x, hi0, lo0);
    umulExtended(0xCD9E8D57u, counter.z, hi1, lo1);
    counter = uvec4(hi1 ^ counter.y ^ key.x, lo1, hi0 ^ counter.w ^ key.y, lo0);
    key += uvec2(0x9E3779B9u, 0xBB67AE85u);  // the Weyl sequence of round keys
  }
  return counter;
}

#endif
