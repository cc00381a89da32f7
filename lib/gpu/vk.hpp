#pragma once
// The one place Vulkan enters vkformer: volk loads the loader at run time, so the
// library has no link-time dependency on libvulkan.
#include <volk.h>

#include <string>

#include "vkformer/error.hpp"

namespace vkf::gpu {

const char* result_name(VkResult r);

[[noreturn]] void throw_vk(VkResult r, const char* what);

inline void check(VkResult r, const char* what) {
  if (r != VK_SUCCESS) throw_vk(r, what);
}

}  // namespace vkf::gpu
