#pragma once
#include <span>
#include <string_view>

namespace vkf::gpu {

struct EmbeddedShader {
  std::string_view name;    // file name in shaders/
  std::string_view source;  // GLSL text
};

// Every file of shaders/, embedded at build time (cmake/embed_shaders_run.cmake).
std::span<const EmbeddedShader> embedded_shaders();

}  // namespace vkf::gpu
