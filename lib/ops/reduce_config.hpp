#pragma once
#include <string>

#include "vkformer/capabilities.hpp"
#include "vkformer/kernel.hpp"

namespace vkf::ops {

// Defines for the row-reduction kernels (softmax, layer_norm): one subgroup per row
// where the subgroup size is fixed and subgroup arithmetic exists, else 256
// invocations reducing through shared memory.
inline Defines row_reduce_defines(const Capabilities& c) {
  if (c.subgroup_basic && c.subgroup_arithmetic && c.min_subgroup_size == c.max_subgroup_size && c.subgroup_size >= 4 &&
      c.subgroup_size <= c.max_workgroup_invocations)
    return {{"WG_SIZE", std::to_string(c.subgroup_size)}, {"SUBGROUP_REDUCE", "1"}};
  uint32_t wg = 256;
  while (wg > c.max_workgroup_invocations) wg /= 2;
  return {{"WG_SIZE", std::to_string(wg)}};
}

}  // namespace vkf::ops
