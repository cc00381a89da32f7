#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "vkformer/kernel.hpp"

namespace vkf::gpu {

// GLSL of a shader embedded from shaders/; throws naming the shader when unknown.
std::string_view embedded_source(std::string_view name);

// Compiles a compute shader to SPIR-V (Vulkan 1.1, SPIR-V 1.3) with the #defines
// prepended and #include "x.glsl" resolved against shaders/. Errors name the shader,
// the variant and the line.
std::vector<uint32_t> compile_glsl(std::string_view name, std::string_view source, const Defines& defines);

// "" when SPIR-V-Tools' validator accepts the module for Vulkan 1.1, else its first
// message: a cached module is checked before a driver sees it (a broken body with a
// valid checksum must be a cache miss, not VK_ERROR_UNKNOWN on every later run).
std::string spirv_problem(const std::vector<uint32_t>& spirv);

std::string glslang_version();
std::string describe_variant(const Defines& defines);

}  // namespace vkf::gpu
