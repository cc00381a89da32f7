#pragma once
#include <string>
#include <vector>

#include "vk.hpp"
#include "vkformer/capabilities.hpp"

namespace vkf::gpu {

// A physical device as vkformer sees it: its capabilities, its extensions and the
// queue family compute work goes to.
struct PhysicalDevice {
  VkPhysicalDevice handle = VK_NULL_HANDLE;
  Capabilities caps;
  std::vector<std::string> extensions;
  uint32_t queue_family = 0;
  uint32_t api_version = 0;  // what vkformer may use: min(instance, device)

  bool has_extension(const char* name) const;
};

PhysicalDevice describe(VkPhysicalDevice device, uint32_t index, uint32_t instance_api);

// Applies the vendor workaround table (quirks.cpp) to a device's capabilities.
void apply_quirks(Capabilities& caps);

}  // namespace vkf::gpu
