#pragma once
#include <atomic>
#include <cstdint>
#include <vector>

#include "log.hpp"
#include "vk.hpp"

namespace vkf::gpu {

// The VkInstance, with the validation layer and its messenger when asked for.
class Instance {
 public:
  Instance(bool validation, bool sync_validation, Log log);
  // An application's instance, used and never destroyed. get_instance_proc_addr: the
  // app's vkGetInstanceProcAddr, or null for the system loader's.
  Instance(VkInstance borrowed, uint32_t api_version, PFN_vkGetInstanceProcAddr get_instance_proc_addr, Log log);
  ~Instance();
  bool borrowed() const { return borrowed_; }
  Instance(const Instance&) = delete;
  Instance& operator=(const Instance&) = delete;

  VkInstance handle() const { return instance_; }
  uint32_t api_version() const { return api_version_; }
  bool validation() const { return validation_; }
  uint64_t messages() const { return messages_.load(); }
  std::vector<VkPhysicalDevice> physical_devices() const;
  const Log& log() const { return log_; }

 private:
  static VKAPI_ATTR VkBool32 VKAPI_CALL on_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                   VkDebugUtilsMessageTypeFlagsEXT types,
                                                   const VkDebugUtilsMessengerCallbackDataEXT* data,
                                                   void* self);
  Log log_;
  VkInstance instance_ = VK_NULL_HANDLE;
  VkDebugUtilsMessengerEXT messenger_ = VK_NULL_HANDLE;
  // This instance's own destroy functions: volk's global pointers follow the instance
  // loaded last, whose extensions (debug utils) another context may lack.
  PFN_vkDestroyInstance destroy_instance_ = nullptr;
  PFN_vkDestroyDebugUtilsMessengerEXT destroy_messenger_ = nullptr;
  uint32_t api_version_ = 0;
  bool validation_ = false;
  bool borrowed_ = false;
  std::atomic<uint64_t> messages_{0};
};

// Loads the Vulkan loader once per process; throws vkf::Error when there is none.
void load_vulkan();

}  // namespace vkf::gpu
