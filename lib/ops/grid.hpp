#pragma once
#include <algorithm>
#include <cstdint>

#include "vkformer/kernel.hpp"

namespace vkf::ops {

// Workgroups for `n` items spread over x then y: x alone is capped at 65535 on many
// devices. Shaders recover the item as y * gl_NumWorkGroups.x + x.
inline Groups grid(uint64_t n) {
  const uint64_t x = std::min<uint64_t>(std::max<uint64_t>(n, 1), 65535);
  return {uint32_t(x), uint32_t((n + x - 1) / x), 1};
}

inline uint64_t ceil_div(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

}  // namespace vkf::ops
