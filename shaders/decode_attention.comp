#version 450
// Decoding attention (flash-decoding): one query per sequence, softmax(q K^T * scale +
// mask) V over a cache of keys, split over keys so that every (sequence, head, stretch
// of CHUNK keys) is a workgroup of its own and a GPU is busy even at batch 1.
//
// Each workgroup writes its stretch's running max m, sum l and unnormalised output o
// to scratch and takes a ticket (an atomic counter per head); the last of the head's
// workgroups to finish combines the stretches,
//   M = max m_s,  L = sum l_s e^(m_s - M),  attn = sum o_s e^(m_s - M) / L.
// With FLAG_PROJECT it goes on to its head's share of the output projection,
// attn_h W[:, h*d:(h+1)*d]^T, writes that to scratch and takes a second ticket (per
// sequence); the last head of the sequence sums the heads' shares in head order
// (deterministic), adds the bias and the residual (LayerNorm-ed first with
// FLAG_NORM_RESIDUAL: post-norm's residual is the previous sublayer's LN) and writes
//   out = attn W^T + b + residual.
// No workgroup ever waits for another (Vulkan promises no forward progress between
// workgroups): the last to arrive does the work, the others simply end. The last resets
// its counter, so the counters stay zero between dispatches.
#extension GL_GOOGLE_include_directive : require
#include "types.glsl"

#ifndef HEAD_DIM
#define HEAD_DIM 64
#endif
#ifndef WG_SIZE
#define WG_SIZE 64
#endif
#ifndef CHUNK
#define CHUNK 64  // keys per workgroup
#endif
layout(local_size_x = WG_SIZE) in;
#include "reduce.glsl"

layout(std430, set = 0, binding = 0) readonly buffer Qb { store_t Q[]; };
layout(std430, set = 0, binding = 1) readonly buffer Kb { store_t K[]; };
layout(std430, set = 0, binding = 2) readonly buffer Vb { store_t V[]; };
layout(std430, set = 0, binding = 3) writeonly buffer Ob { store_t O[]; };
layout(std430, set = 0, binding = 4) readonly buffer Mb { store_t key_mask[]; };  // [batch, kv_len], FLAG_KEY_MASK
#define STEP_BINDING 5
#include "step.glsl"
// Tickets, then the stretches' (m, l, o[HEAD_DIM]), then the heads' projection shares:
// fp32 values as their bits. Coherent: other workgroups read what this one writes.
layout(std430, set = 0, binding = 6) coherent buffer Scratch { uint scratch[]; };
#ifdef PROJECT_VEC4
// Host: every row of W the workgroup reads starts on a whole vec4 (base_w, ldw and HEAD_DIM
// multiples of 4), so each invocation's share of a row is one vector load.
layout(std430, set = 0, binding = 7) readonly buffer Wb { store_vec4 W4[]; };   // [N, ldw / 4], FLAG_PROJECT
#else
layout(std430, set = 0, binding = 7) readonly buffer Wb { store_t W[]; };       // [N, ldw], FLAG_PROJECT
#endif
layout(std430, set = 0, binding = 8) readonly buffer Bb { store_t bias[]; };    // [N]
layout(std430, set = 0, binding = 9) readonly buffer Rb { store_t R[]; };       // [batch, N] residual
layout(std430, set = 0, binding = 10) readonly buffer Gb { store_t gamma[]; };  // [N], FLAG_NORM_RESIDUAL
layout(std430, set = 0, binding = 11) readonly buffer Eb { store_t beta[]; };   // [N]

const uint FLAG_KEY_MASK = 1u, FLAG_STEP = 2u, FLAG_PROJECT = 4u, FLAG_BIAS = 8u, FLAG_RESIDUAL = 16u,
           FLAG_NORM_RESIDUAL = 32u, FLAG_NORM_RMS = 64u,  // FLAG_NORM_RMS: the residual's norm an RMSNorm (no mean, no beta)
           FLAG_POSITION_BIAS = 128u;  // the query at position kv_len - 1 (attention_bias.glsl)
layout(push_constant) uniform Push {
  uint kv_len;  // keys (the most there can be with FLAG_STEP: then the state's key count)
  float scale;
  uint flags;
  uint heads, splits;
  uint q_batch_stride, kv_batch_stride, kv_head_stride, kv_row_stride, o_batch_stride;
  uint N, ldw, r_batch_stride;
  float norm_eps;
  uint base_q, base_k, base_v, base_o, base_w, base_b, base_r;
  uint kv_group;  // query heads per K/V head (grouped-query attention; 1: one each)
  uint bias_positions, bias_origin;  // FLAG_POSITION_BIAS
} pc;
#define POSITION_BIAS_BINDING 12
#include "attention_bias.glsl"

// GROUP query heads per workgroup, heads h0 .. h0 + GROUP - 1 (h0 = GROUP * y), which share
// one K/V head (GROUP divides the K/V group, kv_group): every key and value the
// workgroup loads serves all of them, so grouped-query attention reads each K/V head once
// per stretch, not once per query head.
#ifndef GROUP
#define GROUP 1
#endif
shared float qs[GROUP * HEAD_DIM];  // the heads' queries, scaled
shared float ps[GROUP * CHUNK];     // this stretch's scores per head, then their weights e^(s - m)
shared float attn[GROUP * HEAD_DIM];
shared bool last;
// The projection's columns, each a dot product of GROUP * HEAD_DIM terms split over
// PROJ_LANES adjacent invocations reading adjacent elements of W's row: a subgroup's load
// covers a few rows' contiguous spans where one invocation per column touched as many
// rows as lanes, ldw apart (the H200 took ~50 us per call that way, 12 calls per token).
// Their partial sums meet in shared memory (padded: no bank conflicts), WG_SIZE columns at a time.
#define PROJ_LANES 16u
#if WG_SIZE % 16 != 0
#error "WG_SIZE must be a multiple of PROJ_LANES"
#endif
#define PROJ_COLUMNS (WG_SIZE / PROJ_LANES)  // columns per pass
shared float proj_part[WG_SIZE * (PROJ_LANES + 1u)];
const uint DIMS = (HEAD_DIM + WG_SIZE - 1) / WG_SIZE;  // of a head, per invocation

bool flag(uint f) { return (pc.flags & f) != 0u; }

// Takes a ticket on counter `c` of the scratch after this workgroup's scratch writes;
// true in every invocation of the workgroup that arrives `count`-th (and resets the counter).
bool arrives_last(uint c, uint count) {
  memoryBarrierBuffer();  // this invocation's scratch writes, before the ticket
  barrier();
  if (gl_LocalInvocationID.x == 0u) {
    const uint ticket = atomicAdd(scratch[c], 1u);
    last = ticket == count - 1u;
    if (last) atomicExchange(scratch[c], 0u);  // ready for the next dispatch
  }
  barrier();
  memoryBarrierBuffer();
  return last;
}

void main() {
  const uint tid = gl_LocalInvocationID.x;
  const uint s = gl_WorkGroupID.x, h0 = gl_WorkGroupID.y * GROUP, b = gl_WorkGroupID.z;
  const uint H = pc.heads, S = pc.splits, B = gl_NumWorkGroups.z, blocks = gl_NumWorkGroups.y;
  const uint kv_len = flag(FLAG_STEP) ? step_state[DECODE_KEY_COUNT_WORD] : pc.kv_len;
  const uint j0 = s * CHUNK, n = j0 < kv_len ? min(CHUNK, kv_len - j0) : 0u;  // this stretch's keys
  const uint kv_base = b * pc.kv_batch_stride + (h0 / pc.kv_group) * pc.kv_head_stride;

  // The heads' queries are adjacent in Q's row.
  for (uint i = tid; i < GROUP * HEAD_DIM; i += WG_SIZE)
    qs[i] = float(Q[pc.base_q + b * pc.q_batch_stride + h0 * HEAD_DIM + i]) * pc.scale;
  barrier();
  // Scores, one key per invocation at a time, each key loaded once for every head; a
  // masked key scores -inf.
  float m[GROUP];
  for (uint g = 0; g < GROUP; ++g) m[g] = NEG_INF;
  for (uint jj = tid; jj < n; jj += WG_SIZE) {
    const uint k = pc.base_k + kv_base + (j0 + jj) * pc.kv_row_stride;
    float score[GROUP];
    for (uint g = 0; g < GROUP; ++g) score[g] = 0.0;
    for (uint i = 0; i < HEAD_DIM; ++i) {
      const float key = float(K[k + i]);
      for (uint g = 0; g < GROUP; ++g) score[g] = fma(qs[g * HEAD_DIM + i], key, score[g]);
    }
    float mask = 0.0;
    if (flag(FLAG_KEY_MASK)) mask = float(key_mask[b * pc.kv_len + j0 + jj]);
    for (uint g = 0; g < GROUP; ++g) {
      if (flag(FLAG_POSITION_BIAS)) score[g] += relative_bias(h0 + g, j0 + jj, kv_len - 1u);
      ps[g * CHUNK + jj] = score[g] + mask;
      m[g] = max(m[g], score[g] + mask);
    }
  }
  float l[GROUP];
  for (uint g = 0; g < GROUP; ++g) {
    m[g] = workgroup_max(m[g]);
    l[g] = 0.0;
    for (uint jj = tid; jj < n; jj += WG_SIZE) {
      const float p = ps[g * CHUNK + jj] == NEG_INF ? 0.0 : exp(ps[g * CHUNK + jj] - m[g]);  // m = -inf: every key dropped
      ps[g * CHUNK + jj] = p;
      l[g] += p;
    }
    l[g] = workgroup_sum(l[g]);  // its barriers also publish ps
  }
  // This stretch's unnormalised outputs, one dimension of every head per invocation,
  // each value loaded once.
  float o[GROUP * DIMS];
  for (uint i = tid, r = 0; i < HEAD_DIM; i += WG_SIZE, ++r) {
    float acc[GROUP];
    for (uint g = 0; g < GROUP; ++g) acc[g] = 0.0;
    for (uint jj = 0; jj < n; ++jj) {
      const float value = float(V[pc.base_v + kv_base + (j0 + jj) * pc.kv_row_stride + i]);
      for (uint g = 0; g < GROUP; ++g) acc[g] = fma(ps[g * CHUNK + jj], value, acc[g]);
    }
    for (uint g = 0; g < GROUP; ++g) o[g * DIMS + r] = acc[g];
  }

  // Each head's output: this stretch's alone, or the stretches combined by the last.
  // Scratch: B * H + B tickets (the block's at its first head's, b * H + h0; the
  // sequence's at B * H + b), then per head its S stretches, then per block its share.
  const uint tickets = B * H + B;
  const uint stretch_words = HEAD_DIM + 2u;
  if (S > 1u) {
    for (uint g = 0; g < GROUP; ++g) {
      const uint at = tickets + ((b * H + h0 + g) * S + s) * stretch_words;
      if (tid == 0u) {
        scratch[at] = floatBitsToUint(m[g]);
        scratch[at + 1u] = floatBitsToUint(l[g]);
      }
      for (uint i = tid, r = 0; i < HEAD_DIM; i += WG_SIZE, ++r) scratch[at + 2u + i] = floatBitsToUint(o[g * DIMS + r]);
    }
    if (!arrives_last(b * H + h0, S)) return;
    for (uint g = 0; g < GROUP; ++g) {
      const uint first = tickets + (b * H + h0 + g) * S * stretch_words;
      float M = NEG_INF;
      for (uint t = 0; t < S; ++t) M = max(M, uintBitsToFloat(scratch[first + t * stretch_words]));
      float L = 0.0;
      for (uint i = tid, r = 0; i < HEAD_DIM; i += WG_SIZE, ++r) o[g * DIMS + r] = 0.0;
      for (uint t = 0; t < S; ++t) {
        const uint st = first + t * stretch_words;
        const float mt = uintBitsToFloat(scratch[st]);
        const float w = mt == NEG_INF ? 0.0 : exp(mt - M);  // an empty or fully masked stretch adds nothing
        L += uintBitsToFloat(scratch[st + 1u]) * w;
        for (uint i = tid, r = 0; i < HEAD_DIM; i += WG_SIZE, ++r)
          o[g * DIMS + r] += uintBitsToFloat(scratch[st + 2u + i]) * w;
      }
      l[g] = L;
    }
  }
  // A query with every key masked has l == 0 and gives NaN, as PyTorch's softmax does.
  for (uint g = 0; g < GROUP; ++g)
    for (uint i = tid, r = 0; i < HEAD_DIM; i += WG_SIZE, ++r) attn[g * HEAD_DIM + i] = l[g] > 0.0 ? o[g * DIMS + r] / l[g] : QUIET_NAN;
  if (!flag(FLAG_PROJECT)) {
    barrier();
    for (uint i = tid; i < GROUP * HEAD_DIM; i += WG_SIZE)
      O[pc.base_o + b * pc.o_batch_stride + h0 * HEAD_DIM + i] = store_t(attn[i]);
    return;
  }

  // The block's share of the output projection: its heads' attn W[:, h0*d:(h0+GROUP)*d]^T, [N].
  barrier();
  const uint shares = tickets + B * H * S * stretch_words;
  const uint lane = tid % PROJ_LANES, slot = tid / PROJ_LANES;
  for (uint c0 = 0; c0 < pc.N; c0 += WG_SIZE) {
    for (uint pass = 0; pass < PROJ_LANES; ++pass) {  // WG_SIZE columns, PROJ_COLUMNS a pass
      const uint cc = pass * PROJ_COLUMNS + slot, c = c0 + cc;
      float acc = 0.0;
      if (c < pc.N) {
#ifdef PROJECT_VEC4
        const uint w4 = (pc.base_w + c * pc.ldw + h0 * HEAD_DIM) / 4u;
        for (uint i4 = lane; i4 < GROUP * HEAD_DIM / 4u; i4 += PROJ_LANES) {
          const uint i = 4u * i4;
          acc += dot(vec4(attn[i], attn[i + 1u], attn[i + 2u], attn[i + 3u]), vec4(W4[w4 + i4]));
        }
#else
        const uint w = pc.base_w + c * pc.ldw + h0 * HEAD_DIM;
        for (uint i = lane; i < GROUP * HEAD_DIM; i += PROJ_LANES) acc = fma(attn[i], float(W[w + i]), acc);
#endif
      }
      proj_part[cc * (PROJ_LANES + 1u) + lane] = acc;
    }
    barrier();
    const uint c = c0 + tid;
    if (c < pc.N) {
      float v = 0.0;
      for (uint j = 0; j < PROJ_LANES; ++j) v += proj_part[tid * (PROJ_LANES + 1u) + j];
      scratch[shares + (b * H + h0) * pc.N + c] = floatBitsToUint(v);
    }
    barrier();  // proj_part is rewritten by the next columns
  }
  if (!arrives_last(B * H + b, blocks)) return;

  // The last block of sequence b: out = sum of the shares (in block order) + b + LN?(residual).
  const uint r_row = pc.base_r + b * pc.r_batch_stride;
  float mean = 0.0, rstd = 1.0;
  if (flag(FLAG_NORM_RESIDUAL)) {  // two passes: E[r^2] - mean^2 would cancel when |mean| >> std
    if (!flag(FLAG_NORM_RMS)) {
      float sum = 0.0;
      for (uint c = tid; c < pc.N; c += WG_SIZE) sum += float(R[r_row + c]);
      mean = workgroup_sum(sum) / float(pc.N);
    }
    float m2 = 0.0;
    for (uint c = tid; c < pc.N; c += WG_SIZE) {
      const float d = float(R[r_row + c]) - mean;
      m2 += d * d;
    }
    rstd = inversesqrt(workgroup_sum(m2) / float(pc.N) + pc.norm_eps);
  }
  for (uint c = tid; c < pc.N; c += WG_SIZE) {
    float v = 0.0;
    for (uint t = 0; t < blocks; ++t) v += uintBitsToFloat(scratch[shares + (b * H + t * GROUP) * pc.N + c]);
    if (flag(FLAG_BIAS)) v += float(bias[pc.base_b + c]);
    if (flag(FLAG_RESIDUAL)) {
      float r = float(R[r_row + c]);
      if (flag(FLAG_NORM_RESIDUAL)) r = (r - mean) * rstd * float(gamma[c]) + (flag(FLAG_NORM_RMS) ? 0.0 : float(beta[c]));
      v += r;
    }
    O[pc.base_o + b * pc.o_batch_stride + c] = store_t(v);
  }
}
