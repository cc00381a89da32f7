#pragma once
// Capability sets of the device classes kernels are chosen for, as plans see them
// without a device: lavapipe, the portable profile, NVIDIA-like and AMD-like GPUs, and
// the H200 (a card in the tuned table).
#include <string>

#include "vkformer/capabilities.hpp"

namespace vkf::test {

// lavapipe as Mesa 25.0.7 reports it on a 2-core AMD EPYC (AVX2: no AVX-512).
inline Capabilities lavapipe() {
  Capabilities c;
  c.name = "llvmpipe (LLVM 15.0.6, 256 bits)";
  c.type = DeviceType::Cpu;
  c.cpu_driver = true;
  c.vendor_id = 0x10005;
  c.max_shared_memory = 32768;
  c.max_workgroup_invocations = 1024;
  c.max_workgroup_size = {1024, 1024, 1024};
  c.max_workgroup_count = {65535, 65535, 65535};
  c.subgroup_size = c.min_subgroup_size = c.max_subgroup_size = 8;
  c.subgroup_basic = c.subgroup_arithmetic = c.subgroup_shuffle = c.subgroup_ballot = c.subgroup_size_control = true;
  c.storage_16bit = c.rounding_rte_fp16 = true;
  c.buffer_device_address = c.shader_int64 = true;
  c.max_storage_buffer_range = 128u << 20;
  c.max_texel_buffer_elements = 134217728;
  c.min_storage_buffer_offset_alignment = c.min_texel_buffer_offset_alignment = 16;
  return c;
}

// The portable profile over lavapipe (lib/gpu/device.cpp's clamps): a modest mobile GPU.
inline Capabilities portable() {
  Capabilities c = lavapipe();
  c.type = DeviceType::IntegratedGpu;
  c.max_shared_memory = 16384;
  c.max_workgroup_invocations = 128;
  c.max_workgroup_size = {128, 128, 128};
  c.subgroup_arithmetic = c.subgroup_shuffle = c.subgroup_ballot = false;
  c.buffer_device_address = c.shader_int64 = false;
  c.max_texel_buffer_elements = 65536;
  return c;
}

// An NVIDIA-like discrete GPU with cooperative matrices (not a card in the tuned table).
inline Capabilities nvidia_like() {
  Capabilities c;
  c.name = "NVIDIA-like";
  c.type = DeviceType::DiscreteGpu;
  c.vendor_id = 0x10de;
  c.max_shared_memory = 49152;
  c.max_workgroup_invocations = 1024;
  c.max_workgroup_size = {1024, 1024, 64};
  c.max_workgroup_count = {2147483647, 65535, 65535};
  c.subgroup_size = c.min_subgroup_size = c.max_subgroup_size = 32;
  c.subgroup_basic = c.subgroup_arithmetic = c.subgroup_shuffle = c.subgroup_ballot = c.subgroup_size_control = true;
  c.storage_16bit = c.rounding_rte_fp16 = c.float16_arithmetic = true;
  c.cooperative_matrix_nv = true;
  c.buffer_device_address = c.shader_int64 = true;
  c.max_storage_buffer_range = 0xffffffffu;
  c.max_texel_buffer_elements = 134217728;
  c.min_storage_buffer_offset_alignment = c.min_texel_buffer_offset_alignment = 16;
  return c;
}

// An AMD-like discrete GPU: subgroups of 32 or 64, 64 KiB of shared memory, no
// cooperative matrices.
inline Capabilities amd_like() {
  Capabilities c = nvidia_like();
  c.name = "AMD-like";
  c.vendor_id = 0x1002;
  c.max_shared_memory = 65536;
  c.subgroup_size = 64;
  c.min_subgroup_size = 32;
  c.cooperative_matrix_nv = false;
  return c;
}

// The H200 itself (its ids): the built-in table of tuned cards gives it cooperative
// matrices with split-K in fp16.
inline Capabilities h200() {
  Capabilities c = nvidia_like();
  c.device_id = 0x2335;
  return c;
}

inline Capabilities device(const std::string& name) {
  return name == "lavapipe"   ? lavapipe()
         : name == "portable" ? portable()
         : name == "nvidia"   ? nvidia_like()
         : name == "h200"     ? h200()
                              : amd_like();
}

}  // namespace vkf::test
