// libFuzzer target: the character tokenizer. The first byte picks what the rest is: a
// vocab.json to load, or text (any bytes, invalid UTF-8 included) to encode with the
// date sample's vocabulary and ids to decode.
#include <cstring>

#include "fuzz_input.hpp"
#include "vkformer/error.hpp"
#include "vkformer/tokenizer.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  static const std::string path = vkf::fuzz::scratch_dir() + "/vocab.json";
  if (data[0] == 0) {
    vkf::fuzz::write_file(path, data + 1, size - 1);
    try {
      const vkf::CharTokenizer t = vkf::CharTokenizer::from_file(path);
      (void)t.decode(t.encode("3/3/98"));
    } catch (const vkf::Error&) {
    }
    return 0;
  }
  static const vkf::CharTokenizer dates = vkf::CharTokenizer::from_file(VKF_SOURCE_DIR "/samples/dates/vocab.json");
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  for (uint32_t id : dates.encode(text))
    if (id >= dates.size()) std::abort();  // every id is in the vocabulary
  std::vector<uint32_t> ids;
  for (size_t i = 1; i + 4 <= size; i += 4) {
    uint32_t v;
    std::memcpy(&v, data + i, 4);
    ids.push_back(v % (dates.size() + 3));  // a few ids past the end too
  }
  try {
    (void)dates.decode(ids);
  } catch (const vkf::Error&) {
  }
  return 0;
}
