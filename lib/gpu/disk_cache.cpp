#include "disk_cache.hpp"

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "shader_compiler.hpp"
#include "vkformer/error.hpp"
#include "files.hpp"
#include "hash.hpp"
#include "vk.hpp"

namespace fs = std::filesystem;

namespace vkf::gpu {

namespace {

constexpr char kSpirvMagic[8] = {'V', 'K', 'F', 'S', 'P', 'V', '1', 0};
constexpr char kPipelineMagic[8] = {'V', 'K', 'F', 'P', 'L', 'C', '1', 0};

struct FileHeader {
  char magic[8];
  uint64_t key_hash;    // what the payload was made for
  uint64_t key_hash2;   // a second, differently seeded hash: collisions must hit both
  uint64_t payload_bytes;
  uint64_t payload_hash;
};

uint64_t hash_str(const std::string& s, uint64_t seed = 0xcbf29ce484222325ull) { return fnv1a64(s.data(), s.size(), seed); }

std::string hex(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

std::optional<std::vector<uint8_t>> read_checked(const std::string& path, const char (&magic)[8],
                                                 const std::string& key, bool& rejected) {
  rejected = false;
  const std::string problem = regular_file_problem(path);
  if (problem == "does not exist") return std::nullopt;
  rejected = true;  // a FIFO or a directory in an entry's place is never opened: it could block
  if (!problem.empty()) return std::nullopt;
  std::ifstream f(path, std::ios::binary);
  if (!f) return std::nullopt;
  FileHeader h{};
  if (!f.read(reinterpret_cast<char*>(&h), sizeof h)) return std::nullopt;
  if (std::memcmp(h.magic, magic, 8) != 0 || h.key_hash != hash_str(key) || h.key_hash2 != hash_str(key, 0x9e3779b97f4a7c15ull))
    return std::nullopt;
  if (h.payload_bytes > (256u << 20)) return std::nullopt;
  std::vector<uint8_t> payload(h.payload_bytes);
  if (!f.read(reinterpret_cast<char*>(payload.data()), std::streamsize(payload.size()))) return std::nullopt;
  if (f.peek() != std::char_traits<char>::eof()) return std::nullopt;  // trailing bytes
  if (fnv1a64(payload.data(), payload.size()) != h.payload_hash) return std::nullopt;
  rejected = false;
  return payload;
}

void write_atomic(const std::string& path, const char (&magic)[8], const std::string& key, const void* data,
                  size_t bytes, const Log& log) {
  FileHeader h{};
  std::memcpy(h.magic, magic, 8);
  h.key_hash = hash_str(key);
  h.key_hash2 = hash_str(key, 0x9e3779b97f4a7c15ull);
  h.payload_bytes = bytes;
  h.payload_hash = fnv1a64(data, bytes);
  try {
    write_file_atomically(path, {{reinterpret_cast<const char*>(&h), sizeof h},
                                 {static_cast<const char*>(data), bytes}});
  } catch (const Error& e) {
    log.warn(std::string("cache not saved: ") + e.what());  // a cache is an optimisation, not a result
  }
}

}  // namespace

std::string resolve_cache_dir(const ContextOptions& options) {
  if (!options.disk_cache) return {};
  if (options.cache_dir) return *options.cache_dir;
  if (const char* v = std::getenv("VKF_CACHE_DIR")) {
    std::string s = v;
    if (s == "off" || s == "0" || s == "none") return {};
    if (!s.empty()) return s;
  }
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) return std::string(xdg) + "/vkformer";
  if (const char* home = std::getenv("HOME"); home && *home) return std::string(home) + "/.cache/vkformer";
  return {};
}

DiskCache::DiskCache(std::string dir, const Capabilities& caps, Log log)
    : dir_(std::move(dir)), caps_(caps), log_(std::move(log)) {
  identity_ = std::string("vkformer ") + VKF_VERSION + "; glslang " + glslang_version() + "; " + caps.name +
              "; vendor " + std::to_string(caps.vendor_id) + "; device " + std::to_string(caps.device_id) +
              "; driver " + std::to_string(caps.driver_version) + " " + caps.driver_info + "; uuid ";
  for (auto b : caps.pipeline_cache_uuid) identity_ += std::to_string(b) + ".";
  if (dir_.empty()) return;
  std::error_code ec;
  fs::create_directories(fs::path(dir_) / "spirv", ec);
  if (ec) {
    log_.warn("shader cache disabled: cannot create " + dir_ + ": " + ec.message());
    dir_.clear();
  }
}

std::string DiskCache::spirv_path(const std::string& key) const {
  return dir_ + "/spirv/" + hex(hash_str(identity_ + "\n" + key)) + ".spv";
}

std::string DiskCache::pipeline_cache_path() const {
  return dir_ + "/pipelines-" + hex(hash_str(identity_)) + ".bin";
}

std::optional<std::vector<uint32_t>> DiskCache::load_spirv(const std::string& key) {
  if (!enabled()) return std::nullopt;
  const std::string path = spirv_path(key);
  bool rejected = false;
  auto bytes = read_checked(path, kSpirvMagic, identity_ + "\n" + key, rejected);
  std::vector<uint32_t> spirv;
  if (bytes && bytes->size() >= 20 && bytes->size() % 4 == 0) {
    spirv.resize(bytes->size() / 4);
    std::memcpy(spirv.data(), bytes->data(), bytes->size());
    // Validated outside the lock: other threads' cache lookups need not wait for it.
    if (const std::string problem = spirv_problem(spirv); !problem.empty()) {
      log_.info("shader cache file " + path + " holds invalid SPIR-V (" + problem + "): recompiling");
      spirv.clear();
    }
  }
  std::lock_guard lock(mutex_);
  if (!spirv.empty()) {
    stats_.spirv_hits++;
    return spirv;
  }
  if (bytes || rejected) {
    stats_.spirv_rejected++;
    log_.info("ignoring stale or corrupt shader cache file " + path);
    std::error_code ec;
    fs::remove(path, ec);  // unlinking never opens it (a FIFO too); the fresh compile replaces it
  }
  stats_.spirv_misses++;
  return std::nullopt;
}

void DiskCache::store_spirv(const std::string& key, const std::vector<uint32_t>& spirv) {
  if (!enabled()) return;
  write_atomic(spirv_path(key), kSpirvMagic, identity_ + "\n" + key, spirv.data(), spirv.size() * 4, log_);
}

std::vector<uint8_t> DiskCache::load_pipeline_cache() {
  if (!enabled()) return {};
  bool rejected = false;
  auto bytes = read_checked(pipeline_cache_path(), kPipelineMagic, identity_, rejected);
  // Vulkan's own header must name this device too (VkPipelineCacheHeaderVersionOne).
  if (bytes && bytes->size() >= 32) {
    uint32_t header[4];
    std::memcpy(header, bytes->data(), 16);
    if (header[0] >= 32 && header[1] == VK_PIPELINE_CACHE_HEADER_VERSION_ONE && header[2] == caps_.vendor_id &&
        header[3] == caps_.device_id && std::memcmp(bytes->data() + 16, caps_.pipeline_cache_uuid.data(), 16) == 0) {
      std::lock_guard lock(mutex_);
      stats_.pipeline_cache_loaded = true;
      loaded_pipeline_cache_ = {bytes->size(), fnv1a64(bytes->data(), bytes->size())};
      return std::move(*bytes);
    }
  }
  if (bytes || rejected) log_.info("ignoring stale or corrupt pipeline cache " + pipeline_cache_path());
  return {};
}

void DiskCache::store_pipeline_cache(const std::vector<uint8_t>& data) {
  if (!enabled() || data.empty()) return;
  {
    // Unchanged since it was loaded: not rewritten (a read-only shipped cache stays quiet,
    // and a warm run writes nothing).
    std::lock_guard lock(mutex_);
    if (loaded_pipeline_cache_ && loaded_pipeline_cache_->first == data.size() &&
        loaded_pipeline_cache_->second == fnv1a64(data.data(), data.size()))
      return;
  }
  write_atomic(pipeline_cache_path(), kPipelineMagic, identity_, data.data(), data.size(), log_);
}

CacheStats DiskCache::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

void DiskCache::count_compile() {
  std::lock_guard lock(mutex_);
  stats_.compiled++;
}

}  // namespace vkf::gpu
