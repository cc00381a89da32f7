// libFuzzer target: the safetensors reader (header length, JSON header, dtypes, shapes,
// offsets, overlaps) and the float conversion of every tensor it accepts.
#include "fuzz_input.hpp"
#include "safetensors.hpp"
#include "vkformer/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = vkf::fuzz::scratch_dir() + "/model.safetensors";
  vkf::fuzz::write_file(path, data, size);
  try {
    vkf::model::SafeTensors file(path);
    for (const auto& [name, info] : file.tensors())
      if (info.elements() <= (1u << 16)) (void)file.floats(name);
  } catch (const vkf::Error&) {
  }
  return 0;
}
