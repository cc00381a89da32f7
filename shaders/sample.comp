#version 450
// One token per row drawn from softmax(logits / T), kept to the top_k most likely and then
// to the smallest most-likely set holding top_p of their mass (vkf::Ops::sample); one
// workgroup per row, so a replayed decode step samples without the host. A row holding a
// NaN or infinite logit (an overflow) has no distribution: it gets Ops::kNonFiniteToken.
//
// Tokens rank by logit, larger first, the lower index first on ties: the order
// exp(logit / T) gives, and the host's sampler's. The kept set is a prefix of that order,
// found by two binary searches over the logits' bits (which logit is the last kept, and
// then which of its ties) instead of a sort, so any vocabulary size fits. The draw walks
// the kept tokens in index order: a different order from the host's walk, the same
// distribution. Its uniform number is Philox4x32-10 of (seed; row, step): the same seed gives
// the same tokens, and each step of a replayed list draws anew.
#extension GL_GOOGLE_include_directive : require
#include "types.glsl"
#include "philox.glsl"

#define WG_SIZE 128
layout(local_size_x = WG_SIZE) in;
layout(std430, set = 0, binding = 0) readonly buffer X { store_t x[]; };      // [rows, cols]
layout(std430, set = 0, binding = 1) writeonly buffer I { uint indices[]; };  // [rows]
#define STEP_BINDING 2
#include "decode_step.h"
layout(std430, set = 0, binding = STEP_BINDING) readonly buffer DecodeStepState { uint step_state[]; };

layout(push_constant) uniform Push {
  uint rows, cols, top_k, seed_lo, seed_hi;
  float inv_temperature, top_p;
  uint pad;
} pc;

shared uint count_scratch[WG_SIZE];
shared float mass_scratch[WG_SIZE];
shared uint winner;

uint workgroup_count(uint v) {
  const uint tid = gl_LocalInvocationID.x;
  count_scratch[tid] = v;
  barrier();
  for (uint s = WG_SIZE / 2; s > 0; s >>= 1) {
    if (tid < s) count_scratch[tid] += count_scratch[tid + s];
    barrier();
  }
  const uint r = count_scratch[0];
  barrier();
  return r;
}

float workgroup_mass(float v) {
  const uint tid = gl_LocalInvocationID.x;
  mass_scratch[tid] = v;
  barrier();
  for (uint s = WG_SIZE / 2; s > 0; s >>= 1) {
    if (tid < s) mass_scratch[tid] += mass_scratch[tid + s];
    barrier();
  }
  const float r = mass_scratch[0];
  barrier();
  return r;
}

// A float's bits as an unsigned key with the same order (negatives flipped).
uint key_of(float v) {
  const uint b = floatBitsToUint(v);
  return (b & 0x80000000u) != 0u ? ~b : b | 0x80000000u;
}

uint row_base;
float row_max;

float logit(uint c) { return float(x[row_base + c]); }
float weight(uint c) { return exp((logit(c) - row_max) * pc.inv_temperature); }  // exp(l/T - max/T)

// How many tokens rank at or above the key `t` (counting ties at t in full).
uint count_at_least(uint t) {
  uint n = 0;
  for (uint c = gl_LocalInvocationID.x; c < pc.cols; c += WG_SIZE) n += key_of(logit(c)) >= t ? 1u : 0u;
  return workgroup_count(n);
}

// The kept set is {key > last_key} + {key == last_key and index <= last_index}.
bool kept(uint c, uint last_key, uint last_index) {
  const uint k = key_of(logit(c));
  return k > last_key || (k == last_key && c <= last_index);
}

// The key of the n-th ranked token (1-based): the largest t with count_at_least(t) >= n.
uint nth_key(uint n) {
  uint lo = 0u, hi = 0xffffffffu;  // count_at_least(lo) >= n holds throughout
  while (lo < hi) {
    const uint mid = hi - (hi - lo) / 2u;  // the upper middle, lo < mid <= hi, without overflow
    if (count_at_least(mid) >= n) lo = mid; else hi = mid - 1u;
  }
  return lo;
}

// Among the tokens tied at `key`, the index of the `n`-th lowest (1-based).
uint nth_tied_index(uint key, uint n) {
  uint lo = 0u, hi = pc.cols - 1u;  // the smallest index with n ties at or below it
  while (lo < hi) {
    const uint mid = (lo + hi) / 2u;
    uint m = 0;
    for (uint c = gl_LocalInvocationID.x; c <= mid; c += WG_SIZE) m += key_of(logit(c)) == key ? 1u : 0u;
    if (workgroup_count(m) >= n) hi = mid; else lo = mid + 1u;
  }
  return lo;
}

void main() {
  const uint row = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
  if (row >= pc.rows) return;
  const uint tid = gl_LocalInvocationID.x;
  row_base = row * pc.cols;

  // The largest logit: weights are then at most 1.
  float m = uintBitsToFloat(0xff800000u);
  uint non_finite = 0u;  // a NaN or infinite logit: no distribution to draw from
  for (uint c = tid; c < pc.cols; c += WG_SIZE) {
    const float l = logit(c);
    m = max(m, l);
    // By its bits (exponent all ones): compilers may fold isnan and isinf to false.
    non_finite += (floatBitsToUint(l) & 0x7f800000u) == 0x7f800000u ? 1u : 0u;
  }
  // Uniform across the workgroup (a reduction): every invocation leaves here, or none.
  if (workgroup_count(non_finite) != 0u) {
    if (tid == 0u) indices[row] = 0x80000000u;  // Ops::kNonFiniteToken: no token to draw
    return;
  }
  mass_scratch[tid] = m;
  barrier();
  for (uint s = WG_SIZE / 2; s > 0; s >>= 1) {
    if (tid < s) mass_scratch[tid] = max(mass_scratch[tid], mass_scratch[tid + s]);
    barrier();
  }
  row_max = mass_scratch[0];
  barrier();

  // top_k: the k-th ranked token is the last kept one (without top_k, every token is kept).
  const uint keep = pc.top_k == 0u ? pc.cols : min(pc.top_k, pc.cols);
  uint last_key = 0u, last_index = pc.cols - 1u;
  if (keep < pc.cols) {
    last_key = nth_key(keep);
    const uint above = last_key == 0xffffffffu ? 0u : count_at_least(last_key + 1u);
    // Only when the cut falls inside a run of ties does it matter which of them stay.
    if (count_at_least(last_key) > keep) last_index = nth_tied_index(last_key, keep - above);
  }

  // top_p: the shortest ranked prefix of the kept tokens whose mass reaches top_p of theirs.
  if (pc.top_p < 1.0) {
    float total = 0.0;
    for (uint c = tid; c < pc.cols; c += WG_SIZE) total += kept(c, last_key, last_index) ? weight(c) : 0.0;
    const float goal = pc.top_p * workgroup_mass(total);
    // The largest key whose kept tokens at or above it reach the goal (at last_key, all
    // of them do)...
    uint lo = last_key, hi = 0xffffffffu;
    while (lo < hi) {
      const uint mid = hi - (hi - lo) / 2u;
      float s = 0.0;
      for (uint c = tid; c < pc.cols; c += WG_SIZE)
        s += kept(c, last_key, last_index) && key_of(logit(c)) >= mid ? weight(c) : 0.0;
      if (workgroup_mass(s) >= goal) lo = mid; else hi = mid - 1u;
    }
    // ...and, among its ties, the lowest index that reaches it.
    const uint key = lo;
    float above = 0.0;
    for (uint c = tid; c < pc.cols; c += WG_SIZE)
      above += kept(c, last_key, last_index) && key_of(logit(c)) > key ? weight(c) : 0.0;
    const float need = goal - workgroup_mass(above);
    uint ilo = 0u, ihi = key == last_key ? last_index : pc.cols - 1u;
    const uint ties = count_at_least(key) - (key == 0xffffffffu ? 0u : count_at_least(key + 1u));
    if (ties == 1u) ilo = ihi;  // a lone token at the cut: no tie to split
    while (ilo < ihi) {
      const uint mid = (ilo + ihi) / 2u;
      float s = 0.0;
      for (uint c = tid; c <= mid; c += WG_SIZE) s += key_of(logit(c)) == key ? weight(c) : 0.0;
      if (workgroup_mass(s) >= need) ihi = mid; else ilo = mid + 1u;
    }
    last_key = key;
    last_index = ilo;
  }

  // The draw: an inclusive scan of the kept mass over contiguous chunks, one per invocation.
  const uint chunk = (pc.cols + WG_SIZE - 1u) / WG_SIZE;
  const uint begin = min(tid * chunk, pc.cols), end = min(begin + chunk, pc.cols);
  float local = 0.0;
  for (uint c = begin; c < end; ++c) local += kept(c, last_key, last_index) ? weight(c) : 0.0;
  mass_scratch[tid] = local;
  barrier();
  for (uint s = 1u; s < WG_SIZE; s <<= 1) {  // Hillis-Steele: mass_scratch[i] = sum of chunks 0..i
    const float add = tid >= s ? mass_scratch[tid - s] : 0.0;
    barrier();
    mass_scratch[tid] += add;
    barrier();
  }
  const float total = mass_scratch[WG_SIZE - 1u];
  const float before = mass_scratch[tid] - local;
  const uint step = step_state[DECODE_STEP_WORD];
  // Philox keyed by the seed, counting (row, step): independent draws for every row and
  // step of every seed, 0 included. The top 24 bits make an exact float in [0, 1).
  const uint h = philox4x32_10(uvec4(row, step, 0u, 0u), uvec2(pc.seed_lo, pc.seed_hi)).x;
  const float r = float(h >> 8) * (1.0 / 16777216.0) * total;  // uniform in [0, total)
  if (tid == 0u) winner = 0u;
  barrier();
  // The chunk holding r (the last one with mass that starts at or below it, so that
  // rounding at the very top still lands on a kept token).
  if (local > 0.0 && before <= r) atomicMax(winner, tid + 1u);
  barrier();
  if (tid + 1u == winner) {
    float acc = before;
    uint pick = end;
    for (uint c = begin; c < end; ++c) {
      if (!kept(c, last_key, last_index)) continue;
      pick = c;
      acc += weight(c);
      if (r < acc) break;
    }
    indices[row] = pick;
  }
}
