#include "device.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>


namespace vkf::gpu {

Device::Device(const Instance&, PhysicalDevice physical, bool pipeline_stats) : physical_(std::move(physical)) {
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
  // The cooperative-matrix GEMM: the extension, its feature and the Vulkan memory model
  // its SPIR-V declares (capabilities.hpp says what else it needs).
  VkPhysicalDeviceCooperativeMatrixFeaturesNV coop{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV};
  VkPhysicalDeviceVulkanMemoryModelFeatures vmm{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_MEMORY_MODEL_FEATURES};
  if (c.cooperative_matrix_nv) {
    enable_ext(VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME);
    if (api < VK_API_VERSION_1_2) enable_ext(VK_KHR_VULKAN_MEMORY_MODEL_EXTENSION_NAME);
    coop.cooperativeMatrix = VK_TRUE;
    vmm.vulkanMemoryModel = VK_TRUE;
    // With the memory model on, a shader's Device-scope atomics and barriers (every
    // kernel's default scope: decode_attention's tickets, say) need this too
    // (VUID-RuntimeSpirv-vulkanMemoryModel-06265, seen on an H200).
    vmm.vulkanMemoryModelDeviceScope = VK_TRUE;
    chain(coop);
    chain(vmm);
  }
  // 64-bit integers: the decode-step GEMM's loads through addresses (gemm_small_m.comp).
  feats.features.shaderInt64 = c.shader_int64;
  // Buffer addresses: every block's memory is then allocated with them (memory.cpp).
  VkPhysicalDeviceBufferDeviceAddressFeatures bda{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_BUFFER_DEVICE_ADDRESS_FEATURES};
  if (c.buffer_device_address) {
    bda.bufferDeviceAddress = VK_TRUE;
    chain(bda);
  }
  // Heap budgets (the allocator stays within them, Context::memory_budget reports them).
  if (c.memory_budget) enable_ext(VK_EXT_MEMORY_BUDGET_EXTENSION_NAME);
  // The driver's statistics of each pipeline, on request (a diagnostic for tuning kernels
  // on a GPU: register counts and spills are what its compiler does with our loops).
  VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR exec_props{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR};
  if (pipeline_stats) {
    if (physical_.has_extension(VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME)) {
      VkPhysicalDeviceFeatures2 query{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
      VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR offered{
          VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR};
      query.pNext = &offered;
      vkGetPhysicalDeviceFeatures2(physical_.handle, &query);
      pipeline_statistics_ = offered.pipelineExecutableInfo;
    }
    if (pipeline_statistics_) {
      enable_ext(VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME);
      exec_props.pipelineExecutableInfo = VK_TRUE;
      chain(exec_props);
    } else {
      std::fprintf(stderr, "vkformer: VKF_PIPELINE_STATS: device '%s' offers no pipeline statistics "
                   "(VK_KHR_pipeline_executable_properties): none reported\n", c.name.c_str());
    }
  }

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

thread_local uint64_t blocking_waits_this_thread = 0;

namespace {

// Finds a struct of type `type` in a pNext chain.
const VkBaseInStructure* find_in_chain(const void* chain, VkStructureType type) {
  for (auto* s = static_cast<const VkBaseInStructure*>(chain); s; s = s->pNext)
    if (s->sType == type) return s;
  return nullptr;
}

}  // namespace

Device::Device(PhysicalDevice physical, const BorrowedVulkan& b) : physical_(std::move(physical)), borrowed_(true) {
  auto& c = physical_.caps;
  auto fail = [&](const std::string& why) { throw Error("borrowed Vulkan device '" + c.name + "': " + why); };
  if (!b.device || !b.queue) fail("the device or the queue is null");
  if (physical_.api_version < VK_API_VERSION_1_1) fail("vkformer needs Vulkan 1.1 or newer");
  uint32_t n = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(physical_.handle, &n, nullptr);
  std::vector<VkQueueFamilyProperties> families(n);
  vkGetPhysicalDeviceQueueFamilyProperties(physical_.handle, &n, families.data());
  if (b.queue_family >= n) fail("queue family " + std::to_string(b.queue_family) + " does not exist");
  if (!(families[b.queue_family].queueFlags & VK_QUEUE_COMPUTE_BIT))
    fail("queue family " + std::to_string(b.queue_family) + " has no compute");
  physical_.queue_family = b.queue_family;
  c.compute_only_queue = !(families[b.queue_family].queueFlags & VK_QUEUE_GRAPHICS_BIT);
  c.timestamp_valid_bits = families[b.queue_family].timestampValidBits;

  // What the app enabled, from its VkPhysicalDeviceFeatures2 chain and extension list;
  // vkformer uses no optional feature the device was not created with.
  const void* chain = b.enabled_features;
  if (chain && static_cast<const VkBaseInStructure*>(chain)->sType != VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2)
    fail("enabled_features must point to the VkPhysicalDeviceFeatures2 the device was created with");
  const void* next = chain ? static_cast<const VkBaseInStructure*>(chain)->pNext : nullptr;
  auto feature = [&](VkStructureType type) { return find_in_chain(next, type); };
  auto has_ext = [&](const char* name) {
    for (auto& e : b.enabled_extensions)
      if (e == name) return true;
    return false;
  };
  const auto* v11 = reinterpret_cast<const VkPhysicalDeviceVulkan11Features*>(
      feature(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES));
  const auto* v12 = reinterpret_cast<const VkPhysicalDeviceVulkan12Features*>(
      feature(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES));
  const auto* v13 = reinterpret_cast<const VkPhysicalDeviceVulkan13Features*>(
      feature(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES));
  const auto* s16 = reinterpret_cast<const VkPhysicalDevice16BitStorageFeatures*>(
      feature(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES));
  const auto* f16 = reinterpret_cast<const VkPhysicalDeviceShaderFloat16Int8Features*>(
      feature(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES));
  const auto* s8 = reinterpret_cast<const VkPhysicalDevice8BitStorageFeatures*>(
      feature(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_8BIT_STORAGE_FEATURES));
  const auto* sizectl = reinterpret_cast<const VkPhysicalDeviceSubgroupSizeControlFeatures*>(
      feature(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_FEATURES));
  c.storage_16bit &= (v11 && v11->storageBuffer16BitAccess) || (s16 && s16->storageBuffer16BitAccess);
  c.float16_arithmetic &= (v12 && v12->shaderFloat16) || (f16 && f16->shaderFloat16);
  c.storage_8bit &= (v12 && v12->storageBuffer8BitAccess) || (s8 && s8->storageBuffer8BitAccess);
  c.subgroup_size_control &= (v13 && v13->subgroupSizeControl && v13->computeFullSubgroups) ||
                             (sizectl && sizectl->subgroupSizeControl && sizectl->computeFullSubgroups);
  // Float controls are core in 1.2; below it the extension must have been enabled.
  c.rounding_rte_fp16 &= c.storage_16bit && (physical_.api_version >= VK_API_VERSION_1_2 ||
                                             has_ext(VK_KHR_SHADER_FLOAT_CONTROLS_EXTENSION_NAME));
  const auto* coop = reinterpret_cast<const VkPhysicalDeviceCooperativeMatrixFeaturesNV*>(
      feature(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV));
  const auto* vmm = reinterpret_cast<const VkPhysicalDeviceVulkanMemoryModelFeatures*>(
      feature(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_MEMORY_MODEL_FEATURES));
  const bool memory_model = (v12 && v12->vulkanMemoryModel) || (vmm && vmm->vulkanMemoryModel);
  const bool device_scope = (v12 && v12->vulkanMemoryModelDeviceScope) || (vmm && vmm->vulkanMemoryModelDeviceScope);
  // The memory model without its Device scope forbids Device-scope atomics and barriers
  // in every shader (VUID-RuntimeSpirv-vulkanMemoryModel-06265), and vkformer's kernels
  // use them (decode_attention's tickets, memoryBarrierBuffer): refuse, naming the fix.
  if (memory_model && !device_scope)
    fail("the device was created with vulkanMemoryModel but without vulkanMemoryModelDeviceScope, which forbids the "
         "Device-scope atomics and barriers vkformer's kernels use (VUID-RuntimeSpirv-vulkanMemoryModel-06265): "
         "enable vulkanMemoryModelDeviceScope too, or leave the memory model off");
  c.cooperative_matrix_nv &= has_ext(VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME) && coop && coop->cooperativeMatrix &&
                             memory_model && c.float16_arithmetic && c.storage_16bit;
  c.memory_budget &= has_ext(VK_EXT_MEMORY_BUDGET_EXTENSION_NAME);
  const auto* bda = reinterpret_cast<const VkPhysicalDeviceBufferDeviceAddressFeatures*>(
      feature(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_BUFFER_DEVICE_ADDRESS_FEATURES));
  c.buffer_device_address &= (v12 && v12->bufferDeviceAddress) || (bda && bda->bufferDeviceAddress);
  c.shader_int64 &= chain && static_cast<const VkPhysicalDeviceFeatures2*>(chain)->features.shaderInt64;
  c.quirks.emplace_back("borrowed device: optional features as the application enabled them");

  vkGetPhysicalDeviceMemoryProperties(physical_.handle, &memory_);
  device_ = static_cast<VkDevice>(b.device);
  queue_ = static_cast<VkQueue>(b.queue);
  lock_queue_ = b.lock_queue;
  unlock_queue_ = b.unlock_queue;
  if (bool(lock_queue_) != bool(unlock_queue_)) fail("give both lock_queue and unlock_queue, or neither");
}

Device::~Device() {
  if (borrowed_) return;  // the application's: vkformer's own work is finished (every submit is waited for)
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
  c.subgroup_arithmetic = c.subgroup_shuffle = c.subgroup_ballot = false;  // shared-memory reductions: no subgroup size assumed
  c.max_push_constants_size = std::min<uint32_t>(c.max_push_constants_size, 128);  // the Vulkan minimum
  c.float16_arithmetic = false;                                                    // fp16 storage at most
  c.cooperative_matrix_nv = false;                                                 // needs fp16 arithmetic
  c.buffer_device_address = false;  // not in Vulkan 1.1
  c.shader_int64 = false;           // not on every mobile GPU
  c.max_storage_buffer_range = std::min<uint64_t>(c.max_storage_buffer_range, 128ull << 20);
  c.max_texel_buffer_elements = std::min<uint32_t>(c.max_texel_buffer_elements, 65536);  // the Vulkan minimum
  c.quirks.emplace_back(
      "portable profile: kernels chosen for 16 KiB shared memory, 128 invocations, 128 push-constant bytes, "
      "128 MiB bindings, no subgroup arithmetic, no fp16 arithmetic, no buffer addresses, no 64-bit integers");
}

void Device::emulate_cooperative_matrices() {
  physical_.caps.cooperative_matrix_emulated = true;
  physical_.caps.quirks.emplace_back("policy: cooperative matrices emulated in shared memory (emulate_coopmat; slow)");
}

bool Device::fire(std::atomic<uint64_t>& countdown) {
  for (uint64_t v = countdown.load(); v != 0;)
    if (countdown.compare_exchange_weak(v, v - 1)) return v == 1;
  return false;
}

void Device::submit_and_wait(VkCommandBuffer cb, VkFence fence, uint32_t times) {
  if (lost_)
    throw Error("the Vulkan device was lost earlier (VK_ERROR_DEVICE_LOST): create a new context", ErrorKind::DeviceLost);
  if (fire(faults.submit)) {
    lost_ = true;
    check(VK_ERROR_DEVICE_LOST, "vkQueueSubmit (injected fault)");
  }
  const std::vector<VkCommandBuffer> cbs(times, cb);
  VkSubmitInfo submit{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  submit.commandBufferCount = times;
  submit.pCommandBuffers = cbs.data();
  check(vkResetFences(device_, 1, &fence), "vkResetFences");
  if (lock_queue_) {  // the application's queue: its lock, never concurrent with its own submits
    lock_queue_();
    const VkResult r = vkQueueSubmit(queue_, 1, &submit, fence);
    unlock_queue_();
    if (r == VK_ERROR_DEVICE_LOST) lost_ = true;
    check(r, "vkQueueSubmit");
  } else {
    std::lock_guard lock(queue_mutex_);
    const VkResult r = vkQueueSubmit(queue_, 1, &submit, fence);
    if (r == VK_ERROR_DEVICE_LOST) lost_ = true;
    check(r, "vkQueueSubmit");
  }
  ++blocking_waits_this_thread;
  const VkResult waited = vkWaitForFences(device_, 1, &fence, VK_TRUE, UINT64_MAX);
  if (waited == VK_ERROR_DEVICE_LOST) lost_ = true;
  check(waited, "vkWaitForFences");
}

}  // namespace vkf::gpu
