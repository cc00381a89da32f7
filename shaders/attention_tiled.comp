#version 450
// Fused multi-head attention, the flash-attention-2 pattern for GPUs: a workgroup takes
// BQ queries of one (batch, head) against the keys BKV at a time, as small products
// through shared memory: O = softmax(Q K^T * scale + masks) V with no score matrix in
// memory.
//
// TPR = WG / BQ invocations share each query row (attention.comp gives a row one
// invocation, which leaves most of a workgroup idle on short inputs: 24 rows of 64).
// Per block of keys:
//   1. the block's keys and values are staged in shared memory (every invocation a share);
//   2. invocation t of row r scores keys t, t + TPR, ... of the block against its query
//      (held in registers, scaled) into Ss[r][*], masks applied;
//   3. every invocation of row r reads the row's BKV scores: the block's max, the running
//      max and sum (online softmax, the same values in each), then its own output
//      dimensions t, t + TPR, ... over the block's values, rescaled when the max grows.
// No subgroup operations: it runs wherever the shared memory fits (the host checks).
// Same bindings, push constants and masks as attention.comp.
#extension GL_GOOGLE_include_directive : require
#include "types.glsl"

#ifndef HEAD_DIM
#define HEAD_DIM 64
#endif
#ifndef BQ
#define BQ 16  // query rows per workgroup
#endif
#ifndef BKV
#define BKV 32  // keys per block
#endif
#ifndef WG
#define WG 64  // invocations: a multiple of BQ
#endif
const uint TPR = WG / BQ;                        // invocations per query row
const uint DPT = (HEAD_DIM + TPR - 1) / TPR;     // output dimensions per invocation
const uint KPT = (BKV + TPR - 1) / TPR;          // scores per invocation and block
const uint KV_STRIDE = HEAD_DIM + 1;             // padded rows: TPR invocations read TPR keys
layout(local_size_x = WG) in;

layout(std430, set = 0, binding = 0) readonly buffer Qb { store_t Q[]; };
layout(std430, set = 0, binding = 1) readonly buffer Kb { store_t K[]; };
layout(std430, set = 0, binding = 2) readonly buffer Vb { store_t V[]; };
layout(std430, set = 0, binding = 3) writeonly buffer Ob { store_t O[]; };
layout(std430, set = 0, binding = 4) readonly buffer Mb { store_t key_mask[]; };  // [batch, kv_len], FLAG_KEY_MASK
#define STEP_BINDING 5
#include "step.glsl"

const uint FLAG_KEY_MASK = 1u, FLAG_CAUSAL = 2u, FLAG_STEP = 4u, FLAG_POSITION_BIAS = 8u;
layout(push_constant) uniform Push {
  uint q_len, kv_len;
  float scale;
  uint causal_offset;
  uint flags;
  uint q_batch_stride, q_row_stride;
  uint kv_batch_stride, kv_head_stride, kv_row_stride;
  uint o_batch_stride, o_row_stride;
  uint base_q, base_k, base_v, base_o;
  uint group;  // query heads per K/V head (grouped-query attention; 1: one each)
  uint bias_positions, bias_origin;  // FLAG_POSITION_BIAS (attention_bias.glsl)
} pc;
#define POSITION_BIAS_BINDING 6
#include "attention_bias.glsl"

shared float Ks[BKV * KV_STRIDE];
shared float Vs[BKV * KV_STRIDE];
shared float Ss[BQ * (BKV + 1)];

#define NEG_INF uintBitsToFloat(0xff800000u)

void main() {
  const uint tid = gl_LocalInvocationID.x;
  const uint r = tid / TPR, t = tid % TPR;  // query row in the block, share of it
  const bool stepped = (pc.flags & FLAG_STEP) != 0u;
  const bool causal = (pc.flags & FLAG_CAUSAL) != 0u, masked = (pc.flags & FLAG_KEY_MASK) != 0u,
             positioned = (pc.flags & FLAG_POSITION_BIAS) != 0u;
  const uint kv_len = stepped ? step_state[DECODE_KEY_COUNT_WORD] : pc.kv_len;
  const uint causal_offset = stepped ? kv_len - pc.q_len : pc.causal_offset;
  const uint q0 = gl_WorkGroupID.x * BQ, h = gl_WorkGroupID.y, b = gl_WorkGroupID.z;
  const uint i = q0 + r;  // this invocation's query
  const bool live_row = i < pc.q_len;
  const uint kv_base = b * pc.kv_batch_stride + (h / pc.group) * pc.kv_head_stride;
  const uint k_base = pc.base_k + kv_base, v_base = pc.base_v + kv_base;
  // Keys past this one are causally masked for every row of the workgroup.
  uint kv_end = kv_len;
  if (causal) kv_end = min(kv_len, min(pc.q_len, q0 + BQ) + causal_offset);

  float q[HEAD_DIM], o[DPT];
  const uint q_base = pc.base_q + b * pc.q_batch_stride + min(i, pc.q_len - 1u) * pc.q_row_stride + h * HEAD_DIM;
  for (uint d = 0; d < HEAD_DIM; ++d) q[d] = float(Q[q_base + d]) * pc.scale;
  for (uint u = 0; u < DPT; ++u) o[u] = 0.0;
  float m = NEG_INF, l = 0.0;

  for (uint j0 = 0; j0 < kv_end; j0 += BKV) {
    // 1. Stage the block's keys and values (rows past the end as zeros).
    for (uint e = tid; e < BKV * HEAD_DIM; e += WG) {
      const uint jj = e / HEAD_DIM, d = e % HEAD_DIM, j = j0 + jj;
      const bool ok = j < kv_end;
      const uint at = j * pc.kv_row_stride + d;
      Ks[jj * KV_STRIDE + d] = ok ? float(K[k_base + at]) : 0.0;
      Vs[jj * KV_STRIDE + d] = ok ? float(V[v_base + at]) : 0.0;
    }
    barrier();
    // 2. This invocation's scores of row r.
    for (uint u = 0; u < KPT; ++u) {
      const uint jj = t + TPR * u, j = j0 + jj;
      if (jj >= BKV) break;
      float s = 0.0;
      for (uint d = 0; d < HEAD_DIM; ++d) s = fma(q[d], Ks[jj * KV_STRIDE + d], s);
      if (masked && j < kv_end) s += float(key_mask[b * pc.kv_len + j]);  // masks and growth never meet (host)
      if (positioned && j < kv_end) s += relative_bias(h, j, i + causal_offset);
      if (j >= kv_end || (causal && j > i + causal_offset)) s = NEG_INF;
      Ss[r * (BKV + 1) + jj] = s;
    }
    barrier();
    // 3. The row's online softmax and this invocation's output dimensions.
    float block_max = NEG_INF;
    for (uint jj = 0; jj < BKV; ++jj) block_max = max(block_max, Ss[r * (BKV + 1) + jj]);
    const float m_new = max(m, block_max);
    if (m_new != NEG_INF) {  // else every key so far dropped: nothing to add
      const float correction = exp(m - m_new);  // 0 while m is still -inf
      l *= correction;
      for (uint u = 0; u < DPT; ++u) o[u] *= correction;
      for (uint jj = 0; jj < BKV; ++jj) {
        const float s = Ss[r * (BKV + 1) + jj];
        const float p = s == NEG_INF ? 0.0 : exp(s - m_new);
        l += p;
        for (uint u = 0; u < DPT; ++u) {
          const uint d = t + TPR * u;
          if (d < HEAD_DIM) o[u] = fma(p, Vs[jj * KV_STRIDE + d], o[u]);
        }
      }
      m = m_new;
    }
    barrier();  // before the next block overwrites Ks, Vs and Ss
  }
  if (!live_row) return;
  // A row with every key masked has l == 0 and gives NaN, as PyTorch's softmax does.
  const float inv = 1.0 / l;
  const uint o_base = pc.base_o + b * pc.o_batch_stride + i * pc.o_row_stride + h * HEAD_DIM;
  for (uint u = 0; u < DPT; ++u) {
    const uint d = t + TPR * u;
    if (d < HEAD_DIM) O[o_base + d] = store_t(l > 0.0 ? o[u] * inv : uintBitsToFloat(0x7fc00000u));
  }
}
