#include "shader_compiler.hpp"

#include <spirv-tools/libspirv.hpp>

#include <glslang/Public/ResourceLimits.h>
#include <glslang/Public/ShaderLang.h>
#include <glslang/SPIRV/GlslangToSpv.h>
#include <glslang/build_info.h>

#include <mutex>

#include "embedded_shaders.hpp"
#include "vkformer/error.hpp"

namespace vkf::gpu {

std::string_view embedded_source(std::string_view name) {
  for (const auto& s : embedded_shaders())
    if (s.name == name) return s.source;
  throw Error("unknown shader '" + std::string(name) + "' (not in shaders/)");
}

std::string glslang_version() {
  return std::to_string(GLSLANG_VERSION_MAJOR) + "." + std::to_string(GLSLANG_VERSION_MINOR) + "." +
         std::to_string(GLSLANG_VERSION_PATCH) + GLSLANG_VERSION_FLAVOR;
}

std::string describe_variant(const Defines& defines) {
  if (defines.empty()) return "default variant";
  std::string s;
  for (auto& [k, v] : defines) s += (s.empty() ? "" : " ") + k + (v.empty() ? "" : "=" + v);
  return s;
}

namespace {

// Resolves #include "name" against the embedded shaders/ files.
class EmbeddedIncluder : public glslang::TShader::Includer {
 public:
  IncludeResult* includeLocal(const char* header, const char*, size_t) override { return find(header); }
  IncludeResult* includeSystem(const char* header, const char*, size_t) override { return find(header); }
  void releaseInclude(IncludeResult* r) override { delete r; }

 private:
  IncludeResult* find(const char* header) {
    for (const auto& s : embedded_shaders())
      if (s.name == header) return new IncludeResult(header, s.source.data(), s.source.size(), nullptr);
    return nullptr;
  }
};

void init_glslang() {
  static std::once_flag once;
  std::call_once(once, [] { glslang::InitializeProcess(); });
}

}  // namespace

std::vector<uint32_t> compile_glsl(std::string_view name, std::string_view source, const Defines& defines) {
  init_glslang();
  std::string preamble;
  for (auto& [k, v] : defines) preamble += "#define " + k + " " + v + "\n";

  glslang::TShader shader(EShLangCompute);
  const std::string src(source), src_name(name);
  const char* strings[] = {src.c_str()};
  const int lengths[] = {int(src.size())};
  const char* names[] = {src_name.c_str()};
  shader.setStringsWithLengthsAndNames(strings, lengths, names, 1);
  shader.setPreamble(preamble.c_str());
  shader.setEnvInput(glslang::EShSourceGlsl, EShLangCompute, glslang::EShClientVulkan, 100);
  shader.setEnvClient(glslang::EShClientVulkan, glslang::EShTargetVulkan_1_1);
  shader.setEnvTarget(glslang::EShTargetSpv, glslang::EShTargetSpv_1_3);
  EmbeddedIncluder includer;
  const auto messages = EShMessages(EShMsgSpvRules | EShMsgVulkanRules);
  auto fail = [&](const char* stage, const char* log) {
    throw Error("shader '" + src_name + "' (" + describe_variant(defines) + ") failed to " + stage + ":\n" + log);
  };
  if (!shader.parse(GetDefaultResources(), 100, false, messages, includer)) fail("compile", shader.getInfoLog());

  glslang::TProgram program;
  program.addShader(&shader);
  if (!program.link(messages)) fail("link", program.getInfoLog());

  std::vector<uint32_t> spirv;
  spv::SpvBuildLogger logger;
  glslang::SpvOptions options;
  options.disableOptimizer = false;
  glslang::GlslangToSpv(*program.getIntermediate(EShLangCompute), spirv, &logger, &options);
  if (spirv.empty()) fail("generate SPIR-V", logger.getAllMessages().c_str());
  return spirv;
}

std::string spirv_problem(const std::vector<uint32_t>& spirv) {
  spvtools::SpirvTools tools(SPV_ENV_VULKAN_1_1);
  std::string first;
  tools.SetMessageConsumer([&](spv_message_level_t, const char*, const spv_position_t&, const char* message) {
    if (first.empty()) first = message ? message : "invalid";
  });
  if (tools.Validate(spirv)) return "";
  return first.empty() ? "invalid SPIR-V" : first;
}

}  // namespace vkf::gpu
