// libFuzzer target: the on-disk caches. The first byte picks the file: a SPIR-V entry
// as found on disk (any bytes), a SPIR-V entry with a correct header around the rest
// (so the SPIR-V validator behind the header is reached), or the pipeline cache. A
// cache may only hit or miss: it never throws, crashes or hands back invalid SPIR-V.
#include <cstring>

#include "disk_cache.hpp"
#include "fuzz_input.hpp"
#include "shader_compiler.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  static vkf::Capabilities caps = [] {
    vkf::Capabilities c;
    c.name = "fuzz device";
    return c;
  }();
  static vkf::gpu::DiskCache cache(vkf::fuzz::scratch_dir() + "/cache", caps, vkf::gpu::Log([](vkf::LogLevel, std::string_view) {}));
  const std::string key = "fuzz|kernel";
  switch (data[0] % 3) {
    case 0:
      vkf::fuzz::write_file(cache.spirv_path(key), data + 1, size - 1);
      break;
    case 1: {
      std::vector<uint32_t> words((size - 1) / 4);
      if (!words.empty()) std::memcpy(words.data(), data + 1, words.size() * 4);
      if (!words.empty()) words[0] = 0x07230203u;  // past the magic-number check
      cache.store_spirv(key, words);
      break;
    }
    default:
      vkf::fuzz::write_file(cache.pipeline_cache_path(), data + 1, size - 1);
      (void)cache.load_pipeline_cache();
      return 0;
  }
  if (auto spirv = cache.load_spirv(key))
    if (!vkf::gpu::spirv_problem(*spirv).empty()) std::abort();  // a hit is always valid SPIR-V
  return 0;
}
