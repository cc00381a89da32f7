#pragma once
// An "application" with its own Vulkan instance (validation layer and its own
// messenger), device and queue, made through the Vulkan loader directly: what a game
// lends vkformer (tests/gpu/borrowed_test.cpp, tests/capi/capi_test.cpp).
#include <vulkan/vulkan.h>

#include <atomic>
#include <string>
#include <vector>

#include "vkformer/context.hpp"

namespace vkf::test {

struct AppVulkan {
  VkInstance instance = VK_NULL_HANDLE;
  VkDebugUtilsMessengerEXT messenger = VK_NULL_HANDLE;
  VkPhysicalDevice physical = VK_NULL_HANDLE;
  VkDevice device = VK_NULL_HANDLE;
  VkQueue queue = VK_NULL_HANDLE;
  uint32_t family = 0;
  std::atomic<int> messages{0};
  std::string last_message;
  VkPhysicalDeviceFeatures2 features{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  VkPhysicalDevice16BitStorageFeatures storage16{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES};
  VkPhysicalDeviceVulkanMemoryModelFeatures memory_model{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_MEMORY_MODEL_FEATURES};
  VkPhysicalDeviceBufferDeviceAddressFeatures addresses{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_BUFFER_DEVICE_ADDRESS_FEATURES};
  std::vector<const char*> device_extensions;
  uint32_t api = VK_API_VERSION_1_1;

  static VKAPI_ATTR VkBool32 VKAPI_CALL on_message(VkDebugUtilsMessageSeverityFlagBitsEXT,
                                                   VkDebugUtilsMessageTypeFlagsEXT,
                                                   const VkDebugUtilsMessengerCallbackDataEXT* data, void* self) {
    auto* app = static_cast<AppVulkan*>(self);
    app->messages++;
    app->last_message = data->pMessage ? data->pMessage : "";
    return VK_FALSE;
  }

  // memory_model_without_device_scope: the device is created with the Vulkan memory
  // model (VK_KHR_vulkan_memory_model) but not its Device scope, as an app may.
  // api_version: the app's Vulkan version (1.1 unless given); buffer_addresses: it
  // enables bufferDeviceAddress (Vulkan 1.2) and shaderInt64, as the decode-step GEMM's
  // loads through addresses need.
  explicit AppVulkan(bool enable_16bit_storage, bool memory_model_without_device_scope = false,
                     uint32_t api_version = VK_API_VERSION_1_1, bool buffer_addresses = false)
      : api(api_version) {
    VkApplicationInfo info{VK_STRUCTURE_TYPE_APPLICATION_INFO};
    info.apiVersion = api;
    const char* layer = "VK_LAYER_KHRONOS_validation";
    const char* ext = VK_EXT_DEBUG_UTILS_EXTENSION_NAME;
    VkDebugUtilsMessengerCreateInfoEXT m{VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
    m.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
    m.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT;
    m.pfnUserCallback = &on_message;
    m.pUserData = this;
    VkInstanceCreateInfo ci{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO, &m};
    ci.pApplicationInfo = &info;
    ci.enabledLayerCount = 1;
    ci.ppEnabledLayerNames = &layer;
    ci.enabledExtensionCount = 1;
    ci.ppEnabledExtensionNames = &ext;
    if (vkCreateInstance(&ci, nullptr, &instance) != VK_SUCCESS) return;
    auto create_messenger = reinterpret_cast<PFN_vkCreateDebugUtilsMessengerEXT>(
        vkGetInstanceProcAddr(instance, "vkCreateDebugUtilsMessengerEXT"));
    create_messenger(instance, &m, nullptr, &messenger);
    uint32_t n = 1;
    vkEnumeratePhysicalDevices(instance, &n, &physical);  // the first device, as many apps do
    vkGetPhysicalDeviceQueueFamilyProperties(physical, &n, nullptr);
    std::vector<VkQueueFamilyProperties> families(n);
    vkGetPhysicalDeviceQueueFamilyProperties(physical, &n, families.data());
    while (family < n && !(families[family].queueFlags & VK_QUEUE_COMPUTE_BIT)) ++family;
    const float priority = 1.0f;
    VkDeviceQueueCreateInfo q{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
    q.queueFamilyIndex = family;
    q.queueCount = 1;
    q.pQueuePriorities = &priority;
    storage16.storageBuffer16BitAccess = enable_16bit_storage;
    features.pNext = &storage16;
    if (memory_model_without_device_scope) {
      memory_model.vulkanMemoryModel = VK_TRUE;
      storage16.pNext = &memory_model;
      device_extensions.push_back(VK_KHR_VULKAN_MEMORY_MODEL_EXTENSION_NAME);
    }
    if (buffer_addresses) {
      addresses.bufferDeviceAddress = VK_TRUE;
      features.features.shaderInt64 = VK_TRUE;
      addresses.pNext = features.pNext;
      features.pNext = &addresses;
    }
    VkDeviceCreateInfo d{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO, &features};
    d.queueCreateInfoCount = 1;
    d.pQueueCreateInfos = &q;
    d.enabledExtensionCount = uint32_t(device_extensions.size());
    d.ppEnabledExtensionNames = device_extensions.data();
    if (vkCreateDevice(physical, &d, nullptr, &device) != VK_SUCCESS) return;
    vkGetDeviceQueue(device, family, 0, &queue);
  }

  ~AppVulkan() { destroy(); }
  void destroy() {  // the application's objects, by the application
    if (device) vkDestroyDevice(device, nullptr);
    device = VK_NULL_HANDLE;
    if (messenger) {
      reinterpret_cast<PFN_vkDestroyDebugUtilsMessengerEXT>(
          vkGetInstanceProcAddr(instance, "vkDestroyDebugUtilsMessengerEXT"))(instance, messenger, nullptr);
      messenger = VK_NULL_HANDLE;
    }
    if (instance) vkDestroyInstance(instance, nullptr);
    instance = VK_NULL_HANDLE;
  }

  BorrowedVulkan lend() {
    BorrowedVulkan b;
    b.instance = instance;
    b.api_version = api;
    b.physical_device = physical;
    b.device = device;
    b.queue_family = family;
    b.queue = queue;
    b.enabled_features = &features;
    for (const char* e : device_extensions) b.enabled_extensions.push_back(e);
    return b;
  }
};

}  // namespace vkf::test
