#version 450
// Fused multi-head attention: O = softmax(Q K^T * scale + masks) V without a score
// matrix in memory. One invocation per query row, a workgroup per BQ rows of one
// (batch, head); keys and values stream through shared memory BKV rows at a time and
// each row keeps a running max, a running sum and its output accumulator (online
// softmax), rescaled whenever the max grows.
#extension GL_GOOGLE_include_directive : require
#include "types.glsl"

#ifndef HEAD_DIM
#define HEAD_DIM 64
#endif
#ifndef BQ
#define BQ 64
#endif
#ifndef BKV
#define BKV 16
#endif
layout(local_size_x = BQ) in;

layout(std430, set = 0, binding = 0) readonly buffer Qb { store_t Q[]; };
layout(std430, set = 0, binding = 1) readonly buffer Kb { store_t K[]; };
layout(std430, set = 0, binding = 2) readonly buffer Vb { store_t V[]; };
layout(std430, set = 0, binding = 3) writeonly buffer Ob { store_t O[]; };
layout(std430, set = 0, binding = 4) readonly buffer Mb { store_t key_mask[]; };  // [batch, kv_len], FLAG_KEY_MASK
#define STEP_BINDING 5
#include "step.glsl"

// FLAG_STEP: a replayed decoding step; kv_len is the state's key count and the queries
// are the last q_len of those keys (causal_offset = key count - q_len). Query i's
// position is i + causal_offset (FLAG_POSITION_BIAS: attention_bias.glsl).
const uint FLAG_KEY_MASK = 1u, FLAG_CAUSAL = 2u, FLAG_STEP = 4u, FLAG_POSITION_BIAS = 8u;
layout(push_constant) uniform Push {
  uint q_len, kv_len;
  float scale;
  uint causal_offset;
  uint flags;
  uint q_batch_stride, q_row_stride;
  uint kv_batch_stride, kv_head_stride, kv_row_stride;
  uint o_batch_stride, o_row_stride;
  uint base_q, base_k, base_v, base_o;  // element offsets into the bound views
  uint group;  // query heads per K/V head (grouped-query attention; 1: one each)
  uint bias_positions, bias_origin;  // FLAG_POSITION_BIAS (attention_bias.glsl)
} pc;
#define POSITION_BIAS_BINDING 6
#include "attention_bias.glsl"

shared float Ks[BKV * HEAD_DIM];
shared float Vs[BKV * HEAD_DIM];

#define NEG_INF uintBitsToFloat(0xff800000u)

void main() {
  const uint tid = gl_LocalInvocationID.x;
  const bool stepped = (pc.flags & FLAG_STEP) != 0u;
  const uint kv_len = stepped ? step_state[DECODE_KEY_COUNT_WORD] : pc.kv_len;
  const uint causal_offset = stepped ? kv_len - pc.q_len : pc.causal_offset;
  const uint i = gl_WorkGroupID.x * BQ + tid;  // query row
  const uint h = gl_WorkGroupID.y, b = gl_WorkGroupID.z;
  const bool live_row = i < pc.q_len;
  const uint kv_base = b * pc.kv_batch_stride + (h / pc.group) * pc.kv_head_stride;
  const uint k_base = pc.base_k + kv_base, v_base = pc.base_v + kv_base;

  float q[HEAD_DIM], o[HEAD_DIM];
  const uint q_base = pc.base_q + b * pc.q_batch_stride + i * pc.q_row_stride + h * HEAD_DIM;
  for (uint d = 0; d < HEAD_DIM; ++d) {
    q[d] = live_row ? float(Q[q_base + d]) * pc.scale : 0.0;
    o[d] = 0.0;
  }
  float m = NEG_INF, l = 0.0;
  // Keys past this one are causally masked for every row of the workgroup.
  uint kv_end = kv_len;
  if ((pc.flags & FLAG_CAUSAL) != 0u)
    kv_end = min(kv_len, min(pc.q_len, gl_WorkGroupID.x * BQ + BQ) + causal_offset);

  for (uint j0 = 0; j0 < kv_end; j0 += BKV) {
    for (uint e = tid; e < BKV * HEAD_DIM; e += BQ) {
      uint j = j0 + e / HEAD_DIM, d = e % HEAD_DIM;
      bool ok = j < kv_end;
      Ks[e] = ok ? float(K[k_base + j * pc.kv_row_stride + d]) : 0.0;
      Vs[e] = ok ? float(V[v_base + j * pc.kv_row_stride + d]) : 0.0;
    }
    barrier();
    if (live_row) {
      for (uint jj = 0; jj < BKV; ++jj) {
        uint j = j0 + jj;
        if (j >= kv_end) break;
        if ((pc.flags & FLAG_CAUSAL) != 0u && j > i + causal_offset) break;
        float s = 0.0;
        for (uint d = 0; d < HEAD_DIM; ++d) s = fma(q[d], Ks[jj * HEAD_DIM + d], s);
        if ((pc.flags & FLAG_KEY_MASK) != 0u) s += float(key_mask[b * pc.kv_len + j]);  // masks and growth never meet (host)
        if ((pc.flags & FLAG_POSITION_BIAS) != 0u) s += relative_bias(h, j, i + causal_offset);
        if (s == NEG_INF) continue;  // a dropped key adds nothing
        float m_new = max(m, s);
        float correction = exp(m - m_new);  // 0 while m is still -inf
        float p = exp(s - m_new);
        l = l * correction + p;
        for (uint d = 0; d < HEAD_DIM; ++d) o[d] = o[d] * correction + p * Vs[jj * HEAD_DIM + d];
        m = m_new;
      }
    }
    barrier();
  }
  if (!live_row) return;
  // A row with every key masked has l == 0 and gives NaN, as PyTorch's softmax does.
  const float inv = 1.0 / l;
  const uint o_base = pc.base_o + b * pc.o_batch_stride + i * pc.o_row_stride + h * HEAD_DIM;
  for (uint d = 0; d < HEAD_DIM; ++d) O[o_base + d] = store_t(l > 0.0 ? o[d] * inv : uintBitsToFloat(0x7fc00000u));
}
