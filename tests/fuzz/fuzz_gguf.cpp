// libFuzzer target: the GGUF reader (counts, lengths, value types, nested arrays,
// alignment, tensor infos, offsets, overlaps), from memory as vkf_model_load_from_memory
// hands it files, every value and tensor it accepts read back, and the file read as a
// model (gguf_hugging_face: the config, the names, Q's and K's rows moved back). tools/fuzz.sh runs it
// with a malloc limit: no input of up to 64 KiB may allocate more than a few MB.
#include <string_view>

#include "gguf.hpp"
#include "gguf_hugging_face.hpp"
#include "vkformer/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  try {
    const vkf::ModelFiles files = vkf::ModelFiles::in_memory({{"model.gguf", bytes}});
    const vkf::model::Gguf g(files, "model.gguf");
    uint64_t sum = 0;
    for (const auto& [key, v] : g.metadata()) {
      sum += key.size() + v.count;
      if (v.raw)
        for (uint64_t k = 0; k < v.count; ++k) sum += v.item(k).u;
      for (std::string_view s : v.strings) sum += s.size();
    }
    for (const auto& [name, t] : g.tensors())
      if (t.bytes) sum += t.data[0] + t.data[t.bytes - 1];  // inside the input, or ASan says so
    (void)g.uint_value("general.alignment");
    // As a model: its metadata as config.json, its tensors under transformers' names.
    try {
      (void)vkf::model::gguf_hugging_face_config(g);
      const auto hf = vkf::model::gguf_hugging_face_tensors(g);
      for (const auto& [name, t] : hf.tensors)
        if (t.bytes) sum += t.data[0] + t.data[t.bytes - 1];
    } catch (const vkf::Error&) {
    }
    if (sum == 0xFFFFFFFF) return 1;
  } catch (const vkf::Error&) {
  }
  return 0;
}
