#include "pipelines.hpp"

#include <algorithm>
#include <cstdio>
#include <vector>

#include "embedded_shaders.hpp"
#include "shader_compiler.hpp"

namespace vkf {

std::string KernelDesc::key() const {
  std::string k = shader + "|";
  if (!source.empty()) k += "src:" + std::to_string(gpu::fnv1a64(source.data(), source.size())) + "|";
  for (auto& [n, v] : defines) k += n + "=" + v + ";";
  k += "|b" + std::to_string(bindings) + "|p" + std::to_string(push_constant_bytes) + "|s";
  for (auto s : spec_constants) k += std::to_string(s) + ",";
  if (std::any_of(texel_formats.begin(), texel_formats.end(), [](TexelFormat f) { return f != TexelFormat::None; })) {
    k += "|t";
    for (auto f : texel_formats) k += std::to_string(int(f));
  }
  return k;
}

}  // namespace vkf

namespace vkf::gpu {

Pipelines::Pipelines(Device& device, DiskCache& cache) : device_(device), cache_(cache) {
  auto data = cache_.load_pipeline_cache();
  VkPipelineCacheCreateInfo info{VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO};
  info.initialDataSize = data.size();
  info.pInitialData = data.empty() ? nullptr : data.data();
  if (vkCreatePipelineCache(device_.handle(), &info, nullptr, &pipeline_cache_) != VK_SUCCESS) {
    info.initialDataSize = 0;  // a driver may still refuse data it wrote: start empty
    info.pInitialData = nullptr;
    check(vkCreatePipelineCache(device_.handle(), &info, nullptr, &pipeline_cache_), "vkCreatePipelineCache");
  }
}

Pipelines::~Pipelines() {
  VkDevice d = device_.handle();
  for (auto& [k, p] : live_) {
    vkDestroyPipeline(d, p->pipeline, nullptr);
    vkDestroyPipelineLayout(d, p->layout, nullptr);
    vkDestroyDescriptorSetLayout(d, p->set_layout, nullptr);
  }
  vkDestroyPipelineCache(d, pipeline_cache_, nullptr);
}

void Pipelines::save() {
  if (!cache_.enabled()) return;
  std::lock_guard lock(mutex_);
  size_t n = 0;
  if (vkGetPipelineCacheData(device_.handle(), pipeline_cache_, &n, nullptr) != VK_SUCCESS || n == 0) return;
  std::vector<uint8_t> data(n);
  if (vkGetPipelineCacheData(device_.handle(), pipeline_cache_, &n, data.data()) != VK_SUCCESS) return;
  data.resize(n);
  cache_.store_pipeline_cache(data);
}

Pipeline* Pipelines::get(const KernelDesc& desc) {
  std::lock_guard lock(mutex_);
  std::string key = desc.key();
  auto it = live_.find(key);
  if (it != live_.end()) return it->second.get();
  auto p = create(desc);
  return (live_[key] = std::move(p)).get();
}

namespace {
// Every embedded shader file, names and text, hashed once: a kernel's SPIR-V depends on
// the files it #includes (gemm_flags.h, activations.glsl, ...), not only on its own
// source, so a cached module is valid only for the same library of shaders. (Keyed by
// its own source alone, an upgrade that changed a shared header ran stale SPIR-V.)
uint64_t shader_library_hash() {
  static const uint64_t hash = [] {
    uint64_t h = 0xcbf29ce484222325ull;
    for (const auto& s : embedded_shaders()) {
      h = fnv1a64(s.name.data(), s.name.size(), h);
      h = fnv1a64(s.source.data(), s.source.size(), h);
    }
    return h;
  }();
  return hash;
}
}  // namespace

std::unique_ptr<Pipeline> Pipelines::create(const KernelDesc& desc) {
  const std::string name = desc.shader.empty() ? "inline shader" : desc.shader;
  if (desc.push_constant_bytes > device_.caps().max_push_constants_size)
    throw Error("kernel '" + name + "' needs " + std::to_string(desc.push_constant_bytes) +
                " push-constant bytes; this device allows " + std::to_string(device_.caps().max_push_constants_size));
  const std::string source(desc.source.empty() ? embedded_source(desc.shader) : std::string_view(desc.source));
  const std::string spirv_key = desc.key() + "|" + std::to_string(fnv1a64(source.data(), source.size())) + "|" +
                                std::to_string(shader_library_hash());
  std::vector<uint32_t> spirv;
  if (auto cached = cache_.load_spirv(spirv_key)) {
    spirv = std::move(*cached);
  } else {
    spirv = compile_glsl(name, source, desc.defines);
    cache_.count_compile();
    cache_.store_spirv(spirv_key, spirv);
  }

  VkDevice d = device_.handle();
  auto p = std::make_unique<Pipeline>();
  p->name = name;
  p->bindings = desc.bindings;
  p->push_constant_bytes = desc.push_constant_bytes;
  if (desc.texel_formats.size() > desc.bindings)
    throw Error("kernel '" + name + "' names texel formats for more bindings than it has");
  p->texel_formats = desc.texel_formats;
  p->texel_formats.resize(desc.bindings, TexelFormat::None);

  std::vector<VkDescriptorSetLayoutBinding> bindings(desc.bindings);
  for (uint32_t i = 0; i < desc.bindings; ++i) {
    bindings[i].binding = i;
    bindings[i].descriptorType = p->texel_formats[i] == TexelFormat::None ? VK_DESCRIPTOR_TYPE_STORAGE_BUFFER
                                                                          : VK_DESCRIPTOR_TYPE_STORAGE_TEXEL_BUFFER;
    bindings[i].descriptorCount = 1;
    bindings[i].stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
  }
  VkDescriptorSetLayoutCreateInfo set_info{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
  set_info.bindingCount = desc.bindings;
  set_info.pBindings = bindings.data();
  check(vkCreateDescriptorSetLayout(d, &set_info, nullptr, &p->set_layout), "vkCreateDescriptorSetLayout");

  VkPushConstantRange push{VK_SHADER_STAGE_COMPUTE_BIT, 0, desc.push_constant_bytes};
  VkPipelineLayoutCreateInfo layout_info{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
  layout_info.setLayoutCount = 1;
  layout_info.pSetLayouts = &p->set_layout;
  layout_info.pushConstantRangeCount = desc.push_constant_bytes ? 1 : 0;
  layout_info.pPushConstantRanges = &push;
  check(vkCreatePipelineLayout(d, &layout_info, nullptr, &p->layout), "vkCreatePipelineLayout");

  VkShaderModuleCreateInfo module_info{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
  module_info.codeSize = spirv.size() * 4;
  module_info.pCode = spirv.data();
  VkShaderModule module;
  check(vkCreateShaderModule(d, &module_info, nullptr, &module), "vkCreateShaderModule");

  std::vector<VkSpecializationMapEntry> entries(desc.spec_constants.size());
  for (uint32_t i = 0; i < entries.size(); ++i) entries[i] = {i, i * 4, 4};
  VkSpecializationInfo spec{uint32_t(entries.size()), entries.data(), desc.spec_constants.size() * 4,
                            desc.spec_constants.data()};

  VkComputePipelineCreateInfo info{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
  info.stage = {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO};
  info.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  info.stage.module = module;
  info.stage.pName = "main";
  info.stage.pSpecializationInfo = entries.empty() ? nullptr : &spec;
  info.layout = p->layout;
  if (device_.pipeline_statistics()) info.flags |= VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR;
  VkResult r = vkCreateComputePipelines(d, pipeline_cache_, 1, &info, nullptr, &p->pipeline);
  vkDestroyShaderModule(d, module, nullptr);
  if (r != VK_SUCCESS) throw Error("creating the pipeline for '" + name + "' failed: " + result_name(r));
  if (device_.pipeline_statistics()) report_statistics(p->pipeline, desc.key());
  return p;
}

// One line per executable on stderr: the kernel (its key: shader, defines, spec
// constants) and every statistic the driver reports for it.
void Pipelines::report_statistics(VkPipeline pipeline, const std::string& what) const {
  VkDevice d = device_.handle();
  VkPipelineInfoKHR pipeline_info{VK_STRUCTURE_TYPE_PIPELINE_INFO_KHR};
  pipeline_info.pipeline = pipeline;
  uint32_t executables = 0;
  if (vkGetPipelineExecutablePropertiesKHR(d, &pipeline_info, &executables, nullptr) != VK_SUCCESS) return;
  std::vector<VkPipelineExecutablePropertiesKHR> props(executables, {VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_PROPERTIES_KHR});
  if (vkGetPipelineExecutablePropertiesKHR(d, &pipeline_info, &executables, props.data()) != VK_SUCCESS) return;
  for (uint32_t e = 0; e < executables; ++e) {
    VkPipelineExecutableInfoKHR exec{VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_INFO_KHR};
    exec.pipeline = pipeline;
    exec.executableIndex = e;
    uint32_t n = 0;
    if (vkGetPipelineExecutableStatisticsKHR(d, &exec, &n, nullptr) != VK_SUCCESS) continue;
    std::vector<VkPipelineExecutableStatisticKHR> stats(n, {VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_STATISTIC_KHR});
    if (vkGetPipelineExecutableStatisticsKHR(d, &exec, &n, stats.data()) != VK_SUCCESS) continue;
    std::string line = "vkformer: pipeline statistics: " + what + " [" + props[e].name + ", subgroup " +
                       std::to_string(props[e].subgroupSize) + "]";
    for (uint32_t i = 0; i < n; ++i) {
      line += std::string(i ? ", " : ": ") + stats[i].name + " ";
      switch (stats[i].format) {
        case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_BOOL32_KHR: line += stats[i].value.b32 ? "true" : "false"; break;
        case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_INT64_KHR: line += std::to_string(stats[i].value.i64); break;
        case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_UINT64_KHR: line += std::to_string(stats[i].value.u64); break;
        case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_FLOAT64_KHR: line += std::to_string(stats[i].value.f64); break;
        default: line += "?";
      }
    }
    std::fprintf(stderr, "%s\n", line.c_str());
  }
}

}  // namespace vkf::gpu
