#pragma once
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "log.hpp"
#include "vkformer/capabilities.hpp"
#include "vkformer/context.hpp"
#include "hash.hpp"

namespace vkf::gpu {

// SPIR-V per shader variant, and the driver's VkPipelineCache, kept on disk between
// runs. Every file carries a header naming what it was made for and a checksum; a
// file that does not match exactly is a miss (and is rewritten), never trusted.
class DiskCache {
 public:
  DiskCache(std::string dir, const Capabilities& caps, Log log);  // empty dir: off

  bool enabled() const { return !dir_.empty(); }
  const std::string& dir() const { return dir_; }

  std::optional<std::vector<uint32_t>> load_spirv(const std::string& key);
  void store_spirv(const std::string& key, const std::vector<uint32_t>& spirv);

  std::vector<uint8_t> load_pipeline_cache();
  void store_pipeline_cache(const std::vector<uint8_t>& data);

  CacheStats stats() const;
  void count_compile();

  std::string spirv_path(const std::string& key) const;
  std::string pipeline_cache_path() const;

 private:
  std::string dir_;
  const Capabilities& caps_;
  Log log_;
  std::string identity_;  // vkformer + glslang versions + device + driver
  mutable std::mutex mutex_;
  CacheStats stats_;
  std::optional<std::pair<size_t, uint64_t>> loaded_pipeline_cache_;  // size and hash of what was loaded
};

// Where the cache lives: option, $VKF_CACHE_DIR, $XDG_CACHE_HOME/vkformer, ~/.cache/vkformer.
std::string resolve_cache_dir(const ContextOptions& options);

using vkf::fnv1a64;  // vkformer/hash.hpp

}  // namespace vkf::gpu
