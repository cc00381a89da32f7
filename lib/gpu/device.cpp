#include "device.hpp"

#include <algorithm>
#include <cstdint>
#include <vector>

namespace vkf::gpu {

Device::Device(const Instance&, PhysicalDevice physical) : physical_(std::move(physical)) {
  auto& c = physical_.caps;
  if (physical_.queue_family == ~0u) throw Error("device '" + c.name + "' has no compute queue");
  if (physical_.api_version < VK_API_VERSION_1_1)
    throw Error("device '" + c.name + "' supports only Vulkan " + c.api_version_string +
                "; vkformer needs Vulkan 1.1 or newer");
  vkGetPhysicalDeviceMemoryProperties(physical_.handle, &memory_);

  const uint32_t api = physical_.api_version;
  std::vector<const char*> ext;
  auto enable_ext = [&](const char* name) {
    if (physical_.has_extension(name)) {
      ext.push_back(name);
      return true;
    }
    return false;
  };
  // Required by the spec wherever it is offered (MoltenVK).
  enable_ext("VK_KHR_portability_subset");

  VkPhysicalDeviceFeatures2 feats{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  VkPhysicalDevice16BitStorageFeatures s16{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES};
  VkPhysicalDeviceShaderFloat16Int8Features f16{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES};
  VkPhysicalDevice8BitStorageFeatures s8{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_8BIT_STORAGE_FEATURES};
  VkPhysicalDeviceSubgroupSizeControlFeatures sizectl{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_FEATURES};
  void** tail = &feats.pNext;
  auto chain = [&](auto& s) {
    *tail = &s;
    tail = &s.pNext;
  };
  if (c.storage_16bit) {
    s16.storageBuffer16BitAccess = VK_TRUE;
    chain(s16);
  }
  if (c.float16_arithmetic || c.storage_8bit) {
    if (api < VK_API_VERSION_1_2) enable_ext(VK_KHR_SHADER_FLOAT16_INT8_EXTENSION_NAME);
    f16.shaderFloat16 = c.float16_arithmetic;
    f16.shaderInt8 = VK_FALSE;
    if (c.float16_arithmetic) chain(f16);
  }
  if (c.storage_8bit) {
    if (api < VK_API_VERSION_1_2) enable_ext(VK_KHR_8BIT_STORAGE_EXTENSION_NAME);
    s8.storageBuffer8BitAccess = VK_TRUE;
    chain(s8);
  }
  if (c.subgroup_size_control) {
    if (api < VK_API_VERSION_1_3) enable_ext(VK_EXT_SUBGROUP_SIZE_CONTROL_EXTENSION_NAME);
    sizectl.subgroupSizeControl = VK_TRUE;
    sizectl.computeFullSubgroups = VK_TRUE;
    chain(sizectl);
  }
  // fp16 stores round to nearest even (shaders declare RoundingModeRTE, types.glsl).
  if (c.rounding_rte_fp16 && api < VK_API_VERSION_1_2) enable_ext(VK_KHR_SHADER_FLOAT_CONTROLS_EXTENSION_NAME);
  // Recorded for the cooperative-matrix GEMM to come; enabling it costs nothing.
  if (c.cooperative_matrix_nv) enable_ext("VK_NV_cooperative_matrix");

  float priority = 1.0f;
  VkDeviceQueueCreateInfo queue{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  queue.queueFamilyIndex = physical_.queue_family;
  queue.queueCount = 1;
  queue.pQueuePriorities = &priority;

  VkDeviceCreateInfo info{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
  info.pNext = &feats;
  info.queueCreateInfoCount = 1;
  info.pQueueCreateInfos = &queue;
  info.enabledExtensionCount = uint32_t(ext.size());
  info.ppEnabledExtensionNames = ext.data();
  check(vkCreateDevice(physical_.handle, &info, nullptr, &device_), "vkCreateDevice");
  vkGetDeviceQueue(device_, physical_.queue_family, 0, &queue_);
}

Device::~Device() {
  if (device_) {
    vkDeviceWaitIdle(device_);
    vkDestroyDevice(device_, nullptr);
  }
}

void Device::clamp_to_portable_profile() {
  Capabilities& c = physical_.caps;
  if (c.type == DeviceType::Cpu || c.type == DeviceType::Other) c.type = DeviceType::IntegratedGpu;
  c.max_shared_memory = std::min<uint32_t>(c.max_shared_memory, 16384);
  c.max_workgroup_invocations = std::min<uint32_t>(c.max_workgroup_invocations, 128);
  for (auto& s : c.max_workgroup_size) s = std::min<uint32_t>(s, 128);
  c.subgroup_arithmetic = c.subgroup_shuffle = false;  // shared-memory reductions instead
  c.quirks.emplace_back("portable profile: kernels chosen for 16 KiB shared memory, 128 invocations, no subgroup arithmetic");
}

void Device::submit_and_wait(VkCommandBuffer cb, VkFence fence, uint32_t times) {
  const std::vector<VkCommandBuffer> cbs(times, cb);
  VkSubmitInfo submit{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  submit.commandBufferCount = times;
  submit.pCommandBuffers = cbs.data();
  {
    std::lock_guard lock(queue_mutex_);
    check(vkResetFences(device_, 1, &fence), "vkResetFences");
    check(vkQueueSubmit(queue_, 1, &submit, fence), "vkQueueSubmit");
  }
  check(vkWaitForFences(device_, 1, &fence, VK_TRUE, UINT64_MAX), "vkWaitForFences");
}

}  // namespace vkf::gpu
