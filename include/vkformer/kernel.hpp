#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace vkf {

namespace gpu { struct Pipeline; }

using Defines = std::vector<std::pair<std::string, std::string>>;

// How a binding is read. A storage buffer by default; a read-only storage texel buffer
// (GLSL `imageBuffer` / `uimageBuffer` with this format) where a kernel asks for one:
// CPU drivers (lavapipe) load one 16-byte texel per invocation as one vector load,
// where per-invocation loads from a storage buffer become scalar gathers.
enum class TexelFormat : uint8_t { None, Rgba32F, Rgba32Ui };

// A compute shader variant: which GLSL, which #defines, how many storage buffers it
// binds (set 0, bindings 0..n-1), how many push-constant bytes and which
// specialization constants (constant_id 0..n-1). Equal descriptions share one pipeline.
struct KernelDesc {
  std::string shader;  // a file in shaders/, e.g. "gemm.comp"
  std::string source;  // GLSL text used instead of the embedded shader when non-empty
  Defines defines;
  uint32_t bindings = 1;
  uint32_t push_constant_bytes = 0;
  std::vector<uint32_t> spec_constants;
  // Per binding (missing entries: None): bindings read as storage texel buffers.
  std::vector<TexelFormat> texel_formats;

  std::string key() const;  // identity of the variant, used by the caches
};

// A ready pipeline. Cheap to copy; lives as long as the Context.
class Kernel {
 public:
  Kernel() = default;
  const std::string& name() const;
  explicit operator bool() const { return pipeline_ != nullptr; }

 private:
  friend class Context;
  friend class CommandList;
  explicit Kernel(gpu::Pipeline* p) : pipeline_(p) {}
  gpu::Pipeline* pipeline_ = nullptr;
};

struct Groups {
  uint32_t x = 1, y = 1, z = 1;
};

}  // namespace vkf
