#version 450
// Fused multi-head attention for drivers that run invocations as SIMD lanes of a CPU
// (lavapipe): O = softmax(Q K^T * scale + masks) V without a score matrix in memory and
// without shared memory or barriers (attention.comp streams keys through shared memory
// behind barriers, which lavapipe turns into a coroutine switch per SIMD chunk: it ran
// 3x slower than the unfused path from 64 tokens on).
//
// A workgroup is one subgroup of SG lanes and owns TQ queries of one (batch, head). For
// each block of SG keys, lane j scores key j0 + j against the TQ queries (the queries'
// elements pass between lanes by subgroupShuffle: each lane holds the dimensions
// lane, lane + SG, ... of every query, as it holds them of the output), the block's
// running max and sum come from subgroupMax and subgroupAdd (online softmax), and then
// every lane accumulates its output dimensions over the block's keys, each key's
// probability shuffled from the lane that scored it. Same bindings, push constants and
// masks as attention.comp; the host picks one by device class.
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#include "types.glsl"

#ifndef HEAD_DIM
#define HEAD_DIM 64
#endif
#ifndef TQ
#define TQ 4  // queries per workgroup
#endif
#ifndef SG
#define SG 8  // the subgroup size (the host's, fixed): the workgroup
#endif
const uint DL = (HEAD_DIM + SG - 1) / SG;  // dimensions per lane: lane + SG * t
layout(local_size_x = SG) in;

layout(std430, set = 0, binding = 0) readonly buffer Qb { store_t Q[]; };
#ifdef TEXEL_KV
// TEXEL_KV (host: CPU drivers, HEAD_DIM a multiple of 4 * SG, K's and V's rows and
// offsets on whole vec4s, their views on aligned texels): K and V read as storage texel
// buffers, 16 bytes a texel (4 fp32 values, or 8 fp16 ones as 4 uints). llvmpipe loads a
// texel per lane as one vector, where each lane's element of a storage buffer is a
// gather: a block of SG keys took 2 * HEAD_DIM gathers, and takes HEAD_DIM / 2 texels.
// k4(i) and v4(i) are the i-th vec4 of K and V.
#ifdef VKF_FP16_STORAGE
layout(set = 0, binding = 1, rgba32ui) uniform restrict readonly uimageBuffer K_texels;
layout(set = 0, binding = 2, rgba32ui) uniform restrict readonly uimageBuffer V_texels;
vec4 half_texel(uvec4 t, uint p) { return p == 0u ? vec4(unpackHalf2x16(t.x), unpackHalf2x16(t.y))
                                                   : vec4(unpackHalf2x16(t.z), unpackHalf2x16(t.w)); }
vec4 k4(uint i) { return half_texel(imageLoad(K_texels, int(i / 2u)), i % 2u); }
vec4 v4(uint i) { return half_texel(imageLoad(V_texels, int(i / 2u)), i % 2u); }
#else
layout(set = 0, binding = 1, rgba32f) uniform restrict readonly imageBuffer K_texels;
layout(set = 0, binding = 2, rgba32f) uniform restrict readonly imageBuffer V_texels;
vec4 k4(uint i) { return imageLoad(K_texels, int(i)); }
vec4 v4(uint i) { return imageLoad(V_texels, int(i)); }
#endif
const uint D4 = HEAD_DIM / 4u, DL4 = D4 / SG;  // vec4s per row; per lane of an output: lane + SG * t
#else
layout(std430, set = 0, binding = 1) readonly buffer Kb { store_t K[]; };
layout(std430, set = 0, binding = 2) readonly buffer Vb { store_t V[]; };
#endif
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

#define NEG_INF uintBitsToFloat(0xff800000u)

// A block's online-softmax step for one query, each lane holding the score `si` of its
// key (NEG_INF where masked or past the end): the running max `m` and sum `l` (the same
// in every lane) take the block in; returns this lane's probability, and `correction`
// is the factor by which the output accumulated so far must be scaled.
float softmax_step(float si, inout float m, inout float l, out float correction) {
  const float m_new = max(m, subgroupMax(si));
  // Every key so far dropped: nothing to add (and exp(-inf - -inf) would be NaN).
  correction = m_new == NEG_INF ? 1.0 : exp(m - m_new);
  const float p = si == NEG_INF ? 0.0 : exp(si - m_new);
  l = l * correction + subgroupAdd(p);
  m = m_new;
  return p;
}

void main() {
  const uint lane = gl_SubgroupInvocationID;
  const bool stepped = (pc.flags & FLAG_STEP) != 0u;
  const bool causal = (pc.flags & FLAG_CAUSAL) != 0u, masked = (pc.flags & FLAG_KEY_MASK) != 0u,
             positioned = (pc.flags & FLAG_POSITION_BIAS) != 0u;
  const uint kv_len = stepped ? step_state[DECODE_KEY_COUNT_WORD] : pc.kv_len;
  const uint causal_offset = stepped ? kv_len - pc.q_len : pc.causal_offset;
  const uint q0 = gl_WorkGroupID.x * TQ, h = gl_WorkGroupID.y, b = gl_WorkGroupID.z;
  const uint kv_base = b * pc.kv_batch_stride + (h / pc.group) * pc.kv_head_stride;
  const uint k_base = pc.base_k + kv_base, v_base = pc.base_v + kv_base;
  // Keys past this one are causally masked for every query of the workgroup.
  uint kv_end = kv_len;
  if (causal) kv_end = min(kv_len, min(pc.q_len, q0 + TQ) + causal_offset);

#ifdef TEXEL_KV
  // Each query whole (scaled) in every lane, read at addresses the same in every lane (a
  // CPU driver's scalar load); this lane's vec4s of each output; the running max and sum.
  vec4 q[TQ][D4], o[TQ][DL4];
  float m[TQ], l[TQ];
  for (uint i = 0; i < TQ; ++i) {
    const uint row = min(q0 + i, pc.q_len - 1u);  // past the end: a real row, never stored
    const uint q_base = pc.base_q + b * pc.q_batch_stride + row * pc.q_row_stride + h * HEAD_DIM;
    for (uint t = 0; t < D4; ++t)
      q[i][t] = vec4(float(Q[q_base + 4u * t]), float(Q[q_base + 4u * t + 1u]), float(Q[q_base + 4u * t + 2u]),
                     float(Q[q_base + 4u * t + 3u])) * pc.scale;
    for (uint t = 0; t < DL4; ++t) o[i][t] = vec4(0.0);
    m[i] = NEG_INF;
    l[i] = 0.0;
  }

  for (uint j0 = 0; j0 < kv_end; j0 += SG) {
    // Scores of this lane's key against every query: its row's texels.
    const uint j = j0 + lane, key = min(j, kv_end - 1u);
    const uint k_row4 = (k_base + key * pc.kv_row_stride) / 4u;
    float s[TQ];
    for (uint i = 0; i < TQ; ++i) s[i] = 0.0;
    for (uint t = 0; t < D4; ++t) {
      const vec4 k = k4(k_row4 + t);
      for (uint i = 0; i < TQ; ++i) s[i] += dot(q[i][t], k);
    }
    const float bias = masked ? float(key_mask[b * pc.kv_len + key]) : 0.0;  // masks and growth never meet (host)
    float p[TQ];
    for (uint i = 0; i < TQ; ++i) {
      float si = s[i] + bias;
      if (positioned) si += relative_bias(h, key, q0 + i + causal_offset);
      if (j >= kv_end || (causal && j > q0 + i + causal_offset)) si = NEG_INF;
      float correction;
      p[i] = softmax_step(si, m[i], l[i], correction);
      for (uint t = 0; t < DL4; ++t) o[i][t] *= correction;
    }
    // This lane's output vec4s over the block's keys.
    for (uint e = 0; e < SG; ++e) {
      if (j0 + e >= kv_end) break;
      const uint v_row4 = (v_base + (j0 + e) * pc.kv_row_stride) / 4u;
      float pe[TQ];
      for (uint i = 0; i < TQ; ++i) pe[i] = subgroupShuffle(p[i], e);
      for (uint t = 0; t < DL4; ++t) {
        const vec4 v = v4(v_row4 + lane + SG * t);
        for (uint i = 0; i < TQ; ++i) o[i][t] = fma(vec4(pe[i]), v, o[i][t]);
      }
    }
  }

  // A query with every key masked has l == 0 and gives NaN, as PyTorch's softmax does.
  for (uint i = 0; i < TQ; ++i) {
    if (q0 + i >= pc.q_len) break;
    const uint o_base = pc.base_o + b * pc.o_batch_stride + (q0 + i) * pc.o_row_stride + h * HEAD_DIM;
    const float inv = 1.0 / l[i];
    for (uint t = 0; t < DL4; ++t) {
      const uint d = 4u * (lane + SG * t);
      const vec4 r = l[i] > 0.0 ? o[i][t] * inv : vec4(uintBitsToFloat(0x7fc00000u));
      for (uint c = 0; c < 4u; ++c) O[o_base + d + c] = store_t(r[c]);
    }
  }
#else
  // This lane's dimensions of each query (scaled) and of each output; the queries'
  // running max and sum (the same in every lane).
  float q[TQ][DL], o[TQ][DL], m[TQ], l[TQ];
  for (uint i = 0; i < TQ; ++i) {
    const uint row = min(q0 + i, pc.q_len - 1u);  // past the end: a real row, never stored
    const uint q_base = pc.base_q + b * pc.q_batch_stride + row * pc.q_row_stride + h * HEAD_DIM;
    for (uint t = 0; t < DL; ++t) {
      const uint d = lane + SG * t;
      q[i][t] = d < HEAD_DIM ? float(Q[q_base + min(d, HEAD_DIM - 1u)]) * pc.scale : 0.0;
      o[i][t] = 0.0;
    }
    m[i] = NEG_INF;
    l[i] = 0.0;
  }

  for (uint j0 = 0; j0 < kv_end; j0 += SG) {
    // Scores of this lane's key against every query.
    const uint j = j0 + lane, key = min(j, kv_end - 1u);
    const uint k_row = k_base + key * pc.kv_row_stride;
    float s[TQ];
    for (uint i = 0; i < TQ; ++i) s[i] = 0.0;
    for (uint t = 0; t < DL; ++t)
      for (uint e = 0; e < SG; ++e) {
        const uint d = e + SG * t;
        if (d >= HEAD_DIM) break;
        const float k = float(K[k_row + d]);
        for (uint i = 0; i < TQ; ++i) s[i] = fma(subgroupShuffle(q[i][t], e), k, s[i]);
      }
    const float bias = masked ? float(key_mask[b * pc.kv_len + key]) : 0.0;  // masks and growth never meet (host)
    float p[TQ];
    for (uint i = 0; i < TQ; ++i) {
      float si = s[i] + bias;
      if (positioned) si += relative_bias(h, key, q0 + i + causal_offset);
      if (j >= kv_end || (causal && j > q0 + i + causal_offset)) si = NEG_INF;
      float correction;
      p[i] = softmax_step(si, m[i], l[i], correction);
      for (uint t = 0; t < DL; ++t) o[i][t] *= correction;
    }
    // This lane's output dimensions over the block's keys.
    for (uint e = 0; e < SG; ++e) {
      if (j0 + e >= kv_end) break;
      const uint v_row = v_base + (j0 + e) * pc.kv_row_stride;
      float pe[TQ];
      for (uint i = 0; i < TQ; ++i) pe[i] = subgroupShuffle(p[i], e);
      for (uint t = 0; t < DL; ++t) {
        const uint d = lane + SG * t;
        const float v = float(V[v_row + min(d, HEAD_DIM - 1u)]);
        for (uint i = 0; i < TQ; ++i) o[i][t] = fma(pe[i], v, o[i][t]);
      }
    }
  }

  // A query with every key masked has l == 0 and gives NaN, as PyTorch's softmax does.
  for (uint i = 0; i < TQ; ++i) {
    if (q0 + i >= pc.q_len) break;
    const uint o_base = pc.base_o + b * pc.o_batch_stride + (q0 + i) * pc.o_row_stride + h * HEAD_DIM;
    const float inv = 1.0 / l[i];
    for (uint t = 0; t < DL; ++t) {
      const uint d = lane + SG * t;
      if (d < HEAD_DIM) O[o_base + d] = store_t(l[i] > 0.0 ? o[i][t] * inv : uintBitsToFloat(0x7fc00000u));
    }
  }
#endif
}
