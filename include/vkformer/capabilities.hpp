#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace vkf {

enum class DeviceType { Other, IntegratedGpu, DiscreteGpu, VirtualGpu, Cpu };
const char* to_string(DeviceType);

struct MemoryHeap {
  uint64_t size = 0;
  bool device_local = false;
  bool host_visible = false;  // some memory type on this heap can be mapped
};

// What a device is and what it can do, read once when the device is enumerated.
// Kernels choose their variants from this struct, never from assumptions.
struct Capabilities {
  uint32_t index = 0;  // position in the Vulkan enumeration (what --device N means)
  std::string name;
  DeviceType type = DeviceType::Other;
  // The driver itself reports a CPU (lavapipe, SwiftShader): stays so under the portable
  // profile, which makes `type` a GPU's for choosing kernels.
  bool cpu_driver = false;
  uint32_t vendor_id = 0, device_id = 0;
  std::string vendor;  // "NVIDIA", "AMD", "Intel", "Mesa", ...
  std::string driver_name, driver_info;
  uint32_t driver_version = 0;
  uint32_t api_version = 0;
  std::string api_version_string;
  std::array<uint8_t, 16> device_uuid{};
  std::array<uint8_t, 16> pipeline_cache_uuid{};

  // Limits that shape kernels.
  uint32_t max_shared_memory = 0;
  uint32_t max_workgroup_invocations = 0;
  std::array<uint32_t, 3> max_workgroup_size{};
  std::array<uint32_t, 3> max_workgroup_count{};
  uint64_t max_storage_buffer_range = 0;
  uint64_t max_memory_allocation_size = 0;
  uint64_t min_storage_buffer_offset_alignment = 0;
  uint32_t max_texel_buffer_elements = 0;           // texels one storage texel buffer view may hold
  // Kernels may read storage texel buffers (CPU drivers' fast loads): false where a
  // quirk says the driver reads them wrong.
  bool storage_texel_reads = true;
  uint64_t min_texel_buffer_offset_alignment = 0;   // where such a view may start
  uint64_t non_coherent_atom_size = 0;
  uint32_t max_push_constants_size = 0;
  uint32_t subgroup_size = 0, min_subgroup_size = 0, max_subgroup_size = 0;
  float timestamp_period_ns = 0;     // nanoseconds per timestamp tick
  uint32_t timestamp_valid_bits = 0;  // 0: the compute queue cannot time dispatches

  std::vector<MemoryHeap> heaps;
  // The host and the device share memory (integrated, mobile, CPU): buffers are mapped
  // and read and written in place. A discrete GPU whose device-local memory the host can
  // also map (resizable BAR) is not unified: host reads of it are uncached and slow, so
  // vkformer copies through staging memory there (see is_unified_memory).
  bool unified_memory = false;
  bool host_visible_device_memory = false;  // some device-local memory is host-visible (all of it when unified; ReBAR)

  // Optional features: supported by the device (and enabled by vkformer when it opens it).
  bool storage_16bit = false;
  bool rounding_rte_fp16 = false;  // fp16 results can be made to round to nearest even (used by every fp16 kernel)
  bool float16_arithmetic = false;  // recorded, unused: every kernel computes in fp32
  bool storage_8bit = false;        // recorded, unused: no int8 weights yet
  bool subgroup_basic = false, subgroup_arithmetic = false, subgroup_shuffle = false;
  bool subgroup_ballot = false;  // subgroupBroadcast (the CPU drivers' decode-step GEMM)
  bool subgroup_size_control = false;
  bool portability_subset = false;  // MoltenVK and other layered implementations
  // VK_NV_cooperative_matrix as the cooperative-matrix GEMM (shaders/gemm_coopmat.comp)
  // needs it: the cooperativeMatrix and vulkanMemoryModel features, fp16 arithmetic and
  // storage, and a 16x16x16 fp16 x fp16 + fp32 subgroup-scope product among the
  // driver's configurations.
  bool cooperative_matrix_nv = false;
  // Policy::emulate_coopmat: the cooperative-matrix GEMM runs with its matrices emulated
  // in shared memory (virtual subgroups of 32, no extension), whatever the device offers.
  bool cooperative_matrix_emulated = false;
  bool memory_budget = false;  // VK_EXT_memory_budget: the driver reports each heap's budget and use
  // bufferDeviceAddress (Vulkan 1.2): kernels may read a buffer through its address
  // (Context::device_address), which the decode-step GEMM does on CPU drivers with
  // hardware_gathers.
  bool buffer_device_address = false;
  // shaderInt64 (Vulkan 1.0 core feature): 64-bit integers in kernels, which the
  // decode-step GEMM's loads through addresses take (two 64-bit words a 16-byte unit).
  bool shader_int64 = false;
  // A CPU driver whose host CPU gathers a vector's lanes in one instruction (x86 with
  // AVX-512, where LLVM lowers llvmpipe's loads through addresses to vpgather; without it
  // they become a branch and a load per lane). False on every GPU.
  bool hardware_gathers = false;
  // A CPU driver whose host CPU has AVX-512 (F and VL): 32 vector registers where AVX2
  // has 16, so the direct GEMM's default tiles hold more accumulators. False on every GPU.
  bool host_avx512 = false;
  bool compute_only_queue = false;  // a queue family with compute and no graphics

  std::vector<std::string> quirks;  // workarounds from the vendor table that apply here
};

// Unified: not a discrete GPU, and every device-local heap host-visible (at least one).
bool is_unified_memory(DeviceType type, const std::vector<MemoryHeap>& heaps);

}  // namespace vkf
