// libFuzzer target: config.json as the torch-seq2seq loader reads it (types, ranges,
// the relations between fields) and the architecture lookup of a model directory.
#include "fuzz_input.hpp"
#include "vkformer/error.hpp"
#include "vkformer/model.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string dir = vkf::fuzz::scratch_dir();
  vkf::fuzz::write_file(dir + "/config.json", data, size);
  try {
    (void)vkf::model_architecture(dir);
  } catch (const vkf::Error&) {
  }
  try {
    const vkf::ModelConfig c = vkf::ModelConfig::from_file(dir + "/config.json");
    if (c.d_model % c.nhead || c.pad_id >= c.src_vocab_size || c.max_position == 0) std::abort();  // checked, so never
  } catch (const vkf::Error&) {
  }
  return 0;
}
