#pragma once
// Which fused attention kernel runs a product, and how: a pure function of the device's
// capabilities, its tuning file and the attention with where its operands lie
// (attention_plan), tested without a device (tests/ops/attention_plan_test.cpp);
// Ops::attention checks the views, plans, and records what the plan says.
#include <cstdint>
#include <string>
#include <vector>

#include "gemm_operands.hpp"
#include "vkformer/capabilities.hpp"
#include "vkformer/gemm_tuning.hpp"
#include "vkformer/kernel.hpp"
#include "vkformer/ops.hpp"

namespace vkf::ops {

// The push constants of every fused attention kernel (Push in shaders/attention.comp,
// attention_tiled.comp, attention_direct.comp).
struct AttentionPush {
  uint32_t q_len, kv_len;
  float scale;
  uint32_t causal_offset, flags;
  uint32_t q_batch_stride, q_row_stride, kv_batch_stride, kv_head_stride, kv_row_stride, o_batch_stride, o_row_stride;
  uint32_t base_q, base_k, base_v, base_o;
  uint32_t group;
  uint32_t bias_positions, bias_origin;  // AttentionBias's (attention_bias.glsl)
};
static_assert(sizeof(AttentionPush) == 76, "matches Push in the attention kernels");

// An attention as the plan sees it: resolved (resolved_attention), its storage type,
// where Q, K, V and O lie, and whether a padding mask and a decode step are given.
struct AttentionProblem {
  Attention a;
  DType dtype = DType::F32;
  GemmOperand q, k, v, o;
  bool mask = false, step = false;
  std::optional<AttentionBias> bias;  // its table's place is the kernels' binding 6
};

struct AttentionPlan {
  AttentionKernel kernel = AttentionKernel::Rows;
  std::string shader;
  Defines defines;
  std::vector<TexelFormat> texels;  // per binding: Q, K, V, ...
  Groups groups;
  AttentionPush push{};
  std::string label;
};

// `a` with its packed defaults filled in (Q and O [B, L, H*d], K and V [B, L, kv_heads*d])
// and its head counts checked.
Attention resolved_attention(const Attention& a);

// The kernel: the attention's own (Attention::kernel), else the tuning file's for its
// query length's class, else the default: Direct on CPU drivers where it runs, else Tiled,
// else Rows. An Error where the attention's own cannot run.
AttentionKernel planned_attention_kernel(const Capabilities& caps, const GemmTuning* tuning, const Attention& a,
                                         DType dtype);
AttentionKernel default_attention_kernel(const Capabilities& caps, const Attention& a, DType dtype);

AttentionPlan attention_plan(const Capabilities& caps, const GemmTuning* tuning, const AttentionProblem& p);

}  // namespace vkf::ops
