#pragma once
// What the attention kernels need of an AttentionBias (shaders/attention_bias.glsl).
#include "vkformer/ops.hpp"

namespace vkf::ops {

// Checks that the table covers every live (query, key) pair of `heads` heads: queries at
// positions up to last_query, keys [0, kv_len). A clear error naming `op` otherwise.
void check_attention_bias(const AttentionBias& bias, uint32_t heads, uint64_t last_query, uint32_t kv_len,
                          const char* op);

}  // namespace vkf::ops
