#pragma once
// The parsers take files, so each fuzz input is written to a file of its own (in
// /dev/shm when there is one) and the parser reads it from there, as it would a model's.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>

namespace vkf::fuzz {

inline std::string scratch_dir() {
  static const std::string dir = [] {
    std::string base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    std::string d = base + "/vkf-fuzz-" + std::to_string(getpid());
    mkdir(d.c_str(), 0755);
    return d;
  }();
  return dir;
}

inline void write_file(const std::string& path, const uint8_t* data, size_t size) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) std::abort();
  if (size) std::fwrite(data, 1, size, f);
  std::fclose(f);
}

}  // namespace vkf::fuzz
