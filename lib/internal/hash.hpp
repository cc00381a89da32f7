#pragma once
// FNV-1a, 64 bits: the checksum and key hash of vkformer's own files (the shader and
// pipeline caches, the GEMM tuning file). Not for security: a file that matches is
// still checked in full where it matters (SPIR-V validation, tile validity).
#include <cstddef>
#include <cstdint>

namespace vkf {

inline uint64_t fnv1a64(const void* data, size_t n, uint64_t h = 0xcbf29ce484222325ull) {
  auto* p = static_cast<const uint8_t*>(data);
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}

}  // namespace vkf
