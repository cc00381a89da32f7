#pragma once
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "device.hpp"
#include "disk_cache.hpp"
#include "vkformer/kernel.hpp"

namespace vkf::gpu {

struct Pipeline {
  std::string name;
  uint32_t bindings = 0;
  uint32_t push_constant_bytes = 0;
  std::vector<TexelFormat> texel_formats;  // one per binding
  VkDescriptorSetLayout set_layout = VK_NULL_HANDLE;
  VkPipelineLayout layout = VK_NULL_HANDLE;
  VkPipeline pipeline = VK_NULL_HANDLE;
};

// Compute pipelines, created on first use and kept for the life of the context.
// SPIR-V comes from the disk cache or glslang; the driver's own compile is shared
// through a VkPipelineCache that is persisted too.
class Pipelines {
 public:
  Pipelines(Device& device, DiskCache& cache);
  ~Pipelines();
  Pipeline* get(const KernelDesc& desc);
  void save();

 private:
  std::unique_ptr<Pipeline> create(const KernelDesc& desc);
  void report_statistics(VkPipeline pipeline, const std::string& what) const;
  Device& device_;
  DiskCache& cache_;
  VkPipelineCache pipeline_cache_ = VK_NULL_HANDLE;
  std::mutex mutex_;
  std::unordered_map<std::string, std::unique_ptr<Pipeline>> live_;
};

}  // namespace vkf::gpu
