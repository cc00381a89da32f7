#include "physical_device.hpp"

#include <algorithm>
#include <cstring>

namespace vkf::gpu {


bool PhysicalDevice::has_extension(const char* name) const {
  return std::find(extensions.begin(), extensions.end(), name) != extensions.end();
}

static std::string vendor_name(uint32_t id) {
  switch (id) {
    case 0x1002: return "AMD";
    case 0x10DE: return "NVIDIA";
    case 0x8086: return "Intel";
    case 0x13B5: return "ARM";
    case 0x5143: return "Qualcomm";
    case 0x106B: return "Apple";
    case 0x1010: return "Imagination";
    case 0x144D: return "Samsung";
    case 0x10005: return "Mesa";
    default: return "unknown";
  }
}

static DeviceType device_type(VkPhysicalDeviceType t) {
  switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return DeviceType::IntegratedGpu;
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return DeviceType::DiscreteGpu;
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return DeviceType::VirtualGpu;
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return DeviceType::Cpu;
    default: return DeviceType::Other;
  }
}

static std::string version_string(uint32_t v) {
  return std::to_string(VK_API_VERSION_MAJOR(v)) + "." + std::to_string(VK_API_VERSION_MINOR(v)) + "." +
         std::to_string(VK_API_VERSION_PATCH(v));
}

}  // namespace vkf::gpu

namespace vkf {

bool is_unified_memory(DeviceType type, const std::vector<MemoryHeap>& heaps) {
  if (type == DeviceType::DiscreteGpu) return false;  // its own memory across a bus, even when mappable
  bool any_local = false;
  for (auto& h : heaps)
    if (h.device_local) {
      if (!h.host_visible) return false;
      any_local = true;
    }
  return any_local;
}

}  // namespace vkf

namespace vkf::gpu {

namespace {

// Whether this host's CPU, the device of a CPU driver, gathers a vector's lanes in one
// instruction where llvmpipe loads through buffer addresses: Intel with AVX-512, where
// it was measured (Xeon, Mesa 25.0.7, LLVM 15: vpgatherqd; the decode-step GEMM 1.1-1.8x
// its texel loads in fp32). Elsewhere unmeasured: where LLVM does not judge a core's
// gathers fast (AVX2 without AVX-512 on AMD Zen 1 to 3, say) it lowers them to a branch
// and a load per lane, which is how storage-buffer loads ran slower than texels there.
bool host_has_hardware_gathers() {
#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
  __builtin_cpu_init();
  return __builtin_cpu_is("intel") && __builtin_cpu_supports("avx512f");
#else
  return false;
#endif
}

// Whether the host CPU has AVX-512 (F and VL), whoever made it.
bool host_has_avx512() {
#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl");
#else
  return false;
#endif
}

// Whether the driver lists the product shaders/gemm_coopmat.comp runs: 16x16x16,
// fp16 A and B, fp32 C and D, one subgroup.
bool has_coopmat_16x16x16_fp16(VkPhysicalDevice handle) {
  if (!vkGetPhysicalDeviceCooperativeMatrixPropertiesNV) return false;
  uint32_t n = 0;
  if (vkGetPhysicalDeviceCooperativeMatrixPropertiesNV(handle, &n, nullptr) != VK_SUCCESS) return false;
  std::vector<VkCooperativeMatrixPropertiesNV> all(n, {VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_NV});
  if (vkGetPhysicalDeviceCooperativeMatrixPropertiesNV(handle, &n, all.data()) != VK_SUCCESS) return false;
  for (uint32_t i = 0; i < n; ++i) {
    const auto& p = all[i];
    if (p.MSize == 16 && p.NSize == 16 && p.KSize == 16 && p.AType == VK_COMPONENT_TYPE_FLOAT16_NV &&
        p.BType == VK_COMPONENT_TYPE_FLOAT16_NV && p.CType == VK_COMPONENT_TYPE_FLOAT32_NV &&
        p.DType == VK_COMPONENT_TYPE_FLOAT32_NV && p.scope == VK_SCOPE_SUBGROUP_NV)
      return true;
  }
  return false;
}

}  // namespace

PhysicalDevice describe(VkPhysicalDevice handle, uint32_t index, uint32_t instance_api) {
  PhysicalDevice pd;
  pd.handle = handle;
  Capabilities& c = pd.caps;
  c.index = index;

  uint32_t n = 0;
  vkEnumerateDeviceExtensionProperties(handle, nullptr, &n, nullptr);
  std::vector<VkExtensionProperties> ext(n);
  vkEnumerateDeviceExtensionProperties(handle, nullptr, &n, ext.data());
  for (auto& e : ext) pd.extensions.emplace_back(e.extensionName);

  VkPhysicalDeviceProperties base{};
  vkGetPhysicalDeviceProperties(handle, &base);
  pd.api_version = std::min(instance_api, base.apiVersion);
  const uint32_t api = pd.api_version;
  auto usable = [&](uint32_t core, const char* extension) {
    return api >= core || (extension && pd.has_extension(extension));
  };

  // Properties: chain only the structs this device can answer, or the layer complains.
  VkPhysicalDeviceProperties2 props{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  VkPhysicalDeviceSubgroupProperties subgroup{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
  VkPhysicalDeviceMaintenance3Properties maint3{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES};
  VkPhysicalDeviceDriverProperties driver{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
  VkPhysicalDeviceSubgroupSizeControlProperties sizectl{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_PROPERTIES};
  void** ptail = &props.pNext;
  auto chain = [](void**& tail, auto& s) {
    *tail = &s;
    tail = &s.pNext;
  };
  chain(ptail, subgroup);
  chain(ptail, maint3);
  const bool has_driver_props = usable(VK_API_VERSION_1_2, VK_KHR_DRIVER_PROPERTIES_EXTENSION_NAME);
  if (has_driver_props) chain(ptail, driver);
  const bool has_sizectl = usable(VK_API_VERSION_1_3, VK_EXT_SUBGROUP_SIZE_CONTROL_EXTENSION_NAME);
  if (has_sizectl) chain(ptail, sizectl);
  VkPhysicalDeviceFloatControlsProperties float_controls{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FLOAT_CONTROLS_PROPERTIES};
  const bool has_float_controls = usable(VK_API_VERSION_1_2, VK_KHR_SHADER_FLOAT_CONTROLS_EXTENSION_NAME);
  if (has_float_controls) chain(ptail, float_controls);
  vkGetPhysicalDeviceProperties2(handle, &props);

  c.name = base.deviceName;
  c.type = device_type(base.deviceType);
  c.cpu_driver = c.type == DeviceType::Cpu;
  c.vendor_id = base.vendorID;
  c.device_id = base.deviceID;
  c.vendor = vendor_name(base.vendorID);
  c.driver_version = base.driverVersion;
  c.api_version = base.apiVersion;
  c.api_version_string = version_string(base.apiVersion);
  std::memcpy(c.pipeline_cache_uuid.data(), base.pipelineCacheUUID, 16);
  if (has_driver_props) {
    c.driver_name = driver.driverName;
    c.driver_info = driver.driverInfo;
  }
  {
    VkPhysicalDeviceIDProperties id{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ID_PROPERTIES};
    VkPhysicalDeviceProperties2 p2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, &id};
    vkGetPhysicalDeviceProperties2(handle, &p2);
    std::memcpy(c.device_uuid.data(), id.deviceUUID, 16);
  }

  const auto& L = base.limits;
  c.max_shared_memory = L.maxComputeSharedMemorySize;
  c.max_workgroup_invocations = L.maxComputeWorkGroupInvocations;
  for (int i = 0; i < 3; ++i) {
    c.max_workgroup_size[i] = L.maxComputeWorkGroupSize[i];
    c.max_workgroup_count[i] = L.maxComputeWorkGroupCount[i];
  }
  c.max_storage_buffer_range = L.maxStorageBufferRange;
  c.max_memory_allocation_size = maint3.maxMemoryAllocationSize;
  c.min_storage_buffer_offset_alignment = L.minStorageBufferOffsetAlignment;
  c.max_texel_buffer_elements = L.maxTexelBufferElements;
  c.min_texel_buffer_offset_alignment = L.minTexelBufferOffsetAlignment;
  c.non_coherent_atom_size = L.nonCoherentAtomSize;
  c.max_push_constants_size = L.maxPushConstantsSize;
  c.timestamp_period_ns = L.timestampPeriod;
  c.subgroup_size = subgroup.subgroupSize;
  c.min_subgroup_size = c.max_subgroup_size = subgroup.subgroupSize;
  if (has_sizectl) {
    c.min_subgroup_size = sizectl.minSubgroupSize;
    c.max_subgroup_size = sizectl.maxSubgroupSize;
  }
  const bool compute_stage = subgroup.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT;
  c.subgroup_basic = compute_stage && (subgroup.supportedOperations & VK_SUBGROUP_FEATURE_BASIC_BIT);
  c.subgroup_arithmetic = compute_stage && (subgroup.supportedOperations & VK_SUBGROUP_FEATURE_ARITHMETIC_BIT);
  c.subgroup_shuffle = compute_stage && (subgroup.supportedOperations & VK_SUBGROUP_FEATURE_SHUFFLE_BIT);
  c.subgroup_ballot = compute_stage && (subgroup.supportedOperations & VK_SUBGROUP_FEATURE_BALLOT_BIT);

  // Features.
  VkPhysicalDeviceFeatures2 feats{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  VkPhysicalDevice16BitStorageFeatures s16{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES};
  VkPhysicalDeviceShaderFloat16Int8Features f16{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES};
  VkPhysicalDevice8BitStorageFeatures s8{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_8BIT_STORAGE_FEATURES};
  VkPhysicalDeviceSubgroupSizeControlFeatures sizectl_f{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_FEATURES};
  void** ftail = &feats.pNext;
  chain(ftail, s16);
  const bool has_f16 = usable(VK_API_VERSION_1_2, VK_KHR_SHADER_FLOAT16_INT8_EXTENSION_NAME);
  const bool has_s8 = usable(VK_API_VERSION_1_2, VK_KHR_8BIT_STORAGE_EXTENSION_NAME);
  if (has_f16) chain(ftail, f16);
  if (has_s8) chain(ftail, s8);
  if (has_sizectl) chain(ftail, sizectl_f);
  VkPhysicalDeviceCooperativeMatrixFeaturesNV coop_f{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV};
  VkPhysicalDeviceVulkanMemoryModelFeatures vmm_f{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_MEMORY_MODEL_FEATURES};
  const bool has_coop = pd.has_extension(VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME);
  const bool has_vmm = usable(VK_API_VERSION_1_2, VK_KHR_VULKAN_MEMORY_MODEL_EXTENSION_NAME);
  if (has_coop) chain(ftail, coop_f);
  if (has_vmm) chain(ftail, vmm_f);
  // Buffer device addresses as core Vulkan 1.2 only (no extension to enable).
  VkPhysicalDeviceBufferDeviceAddressFeatures bda_f{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_BUFFER_DEVICE_ADDRESS_FEATURES};
  const bool has_bda = pd.api_version >= VK_API_VERSION_1_2;
  if (has_bda) chain(ftail, bda_f);
  vkGetPhysicalDeviceFeatures2(handle, &feats);
  c.storage_16bit = s16.storageBuffer16BitAccess;
  c.float16_arithmetic = has_f16 && f16.shaderFloat16;
  c.storage_8bit = has_s8 && s8.storageBuffer8BitAccess;
  c.subgroup_size_control = has_sizectl && sizectl_f.subgroupSizeControl && sizectl_f.computeFullSubgroups;
  c.portability_subset = pd.has_extension("VK_KHR_portability_subset");
  c.cooperative_matrix_nv = has_coop && coop_f.cooperativeMatrix && has_vmm && vmm_f.vulkanMemoryModel &&
                            vmm_f.vulkanMemoryModelDeviceScope &&
                            c.float16_arithmetic && c.storage_16bit && has_coopmat_16x16x16_fp16(handle);
  c.memory_budget = pd.has_extension(VK_EXT_MEMORY_BUDGET_EXTENSION_NAME);
  c.buffer_device_address = has_bda && bda_f.bufferDeviceAddress;
  c.shader_int64 = feats.features.shaderInt64;
  c.hardware_gathers = c.cpu_driver && host_has_hardware_gathers();
  c.host_avx512 = c.cpu_driver && host_has_avx512();
  c.rounding_rte_fp16 = c.storage_16bit && has_float_controls && float_controls.shaderRoundingModeRTEFloat16;

  // Memory: unified when the device is not discrete and the host can map all its memory.
  VkPhysicalDeviceMemoryProperties mem{};
  vkGetPhysicalDeviceMemoryProperties(handle, &mem);
  c.heaps.resize(mem.memoryHeapCount);
  for (uint32_t h = 0; h < mem.memoryHeapCount; ++h) {
    c.heaps[h].size = mem.memoryHeaps[h].size;
    c.heaps[h].device_local = mem.memoryHeaps[h].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT;
  }
  for (uint32_t t = 0; t < mem.memoryTypeCount; ++t)
    if (mem.memoryTypes[t].propertyFlags & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT)
      c.heaps[mem.memoryTypes[t].heapIndex].host_visible = true;
  c.unified_memory = is_unified_memory(c.type, c.heaps);
  for (auto& h : c.heaps) c.host_visible_device_memory |= h.device_local && h.host_visible;

  // Queue: a compute-only family runs beside graphics work instead of behind it.
  vkGetPhysicalDeviceQueueFamilyProperties(handle, &n, nullptr);
  std::vector<VkQueueFamilyProperties> families(n);
  vkGetPhysicalDeviceQueueFamilyProperties(handle, &n, families.data());
  int best = -1;
  for (uint32_t q = 0; q < n; ++q) {
    if (!(families[q].queueFlags & VK_QUEUE_COMPUTE_BIT)) continue;
    bool compute_only = !(families[q].queueFlags & VK_QUEUE_GRAPHICS_BIT);
    if (best < 0 || (compute_only && !c.compute_only_queue)) {
      best = int(q);
      c.compute_only_queue = compute_only;
    }
  }
  pd.queue_family = best < 0 ? ~0u : uint32_t(best);
  if (best >= 0) c.timestamp_valid_bits = families[best].timestampValidBits;

  apply_quirks(c);
  return pd;
}

}  // namespace vkf::gpu
