// libFuzzer target: the tokenizers. The first byte picks what the rest is:
//   0  a vocab.json for the character tokenizer
//   2  text and ids for BART's byte-level BPE (tests/hf/bart's files): any bytes, invalid
//      UTF-8 and NUL included (both refused); valid text without special tokens must come back unchanged
//   3  a merges.txt for BART's tokenizer
//   4  a tokenizer.json (a Llama's of 360 tokens): its JSON (nesting bounded), vocabulary,
//      merges (each in the vocabulary), added tokens and pipeline
//   5  a SentencePiece model file for our precompiled-charsmap validator (libsentencepiece,
//      uninstrumented, only sees maps it passed)
//   6  text for WordPiece (all-MiniLM-L6-v2's vocabulary, tests/hf/bert/tokenizer), as the
//      fast and the slow tokenizer read it: any bytes (invalid UTF-8 and NUL refused), single
//      and as a pair, cut and not; every id in the vocabulary, a cut one within its bound
//   7  a vocab.txt for WordPiece (its lines, any bytes)
//   else  text (any bytes) to encode with the date sample's vocabulary, and ids to decode.
#include <cstring>
#include <filesystem>
#include <memory>

#include "bart_tokenizer.hpp"
#include "wordpiece_tokenizer.hpp"
#include "fuzz_input.hpp"
#include "hf_text.hpp"
#include "precompiled_charsmap.hpp"
#include "vkformer/error.hpp"
#include "vkformer/tokenizer.hpp"

namespace {

namespace fs = std::filesystem;

// A copy of tests/hf/bart's tokenizer files, without clean_up_tokenization (so that
// decoding is the exact inverse of encoding), and with `merges` when given.
std::string bart_directory(const char* name, const uint8_t* merges, size_t size) {
  const fs::path d = fs::path(vkf::fuzz::scratch_dir()) / name;
  static const fs::path source = fs::path(VKF_SOURCE_DIR) / "tests" / "hf" / "bart";
  if (!fs::exists(d / "vocab.json")) {
    fs::create_directories(d);
    fs::copy_file(source / "vocab.json", d / "vocab.json");
    fs::copy_file(source / "merges.txt", d / "merges.txt");
    const char config[] = R"({"clean_up_tokenization_spaces": false})";
    vkf::fuzz::write_file((d / "tokenizer_config.json").string(), reinterpret_cast<const uint8_t*>(config),
                          sizeof config - 1);
  }
  if (merges) vkf::fuzz::write_file((d / "merges.txt").string(), merges, size);
  return d.string();
}

constexpr uint32_t kBartVocab = 561;  // tests/hf/bart/config.json's vocab_size

// What every tokenizer refuses: text that is not UTF-8 or holds a NUL byte.
bool refusable(std::string_view text) {
  return vkf::model::invalid_utf8_at(text) != std::string_view::npos || text.find('\0') != std::string_view::npos;
}

int fuzz_bart(uint8_t what, const uint8_t* data, size_t size) {
  if (what == 3) {
    try {
      const vkf::model::BartTokenizer t(bart_directory("bart_merges", data, size), kBartVocab);
      (void)t.decode(t.encode("Hello world, 12 \xe6\x97\xa5!"));
    } catch (const vkf::Error&) {
    }
    return 0;
  }
  static const auto bart = std::make_unique<vkf::model::BartTokenizer>(bart_directory("bart", nullptr, 0), kBartVocab);
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  std::vector<uint32_t> ids;
  try {
    ids = bart->encode(text);
  } catch (const vkf::Error&) {
    if (!refusable(text)) std::abort();  // only bad UTF-8 and NUL bytes are refused
    return 0;
  }
  for (uint32_t id : ids)
    if (id >= bart->size()) std::abort();
  // Byte-level BPE loses nothing: what comes back is the text (special tokens aside).
  if (text.find('<') == std::string_view::npos && bart->decode(ids) != text) std::abort();
  std::vector<uint32_t> random;
  for (size_t i = 0; i + 4 <= size; i += 4) {
    uint32_t v;
    std::memcpy(&v, data + i, 4);
    random.push_back(v % (bart->size() + 3));
  }
  try {
    (void)bart->decode(random);
  } catch (const vkf::Error&) {
  }
  return 0;
}

int fuzz_tokenizer_json(const uint8_t* data, size_t size) {
  static const fs::path d = [] {
    const fs::path dir = fs::path(vkf::fuzz::scratch_dir()) / "tokenizer_json";
    fs::create_directories(dir);
    const char config[] = R"({"model_type": "llama", "vocab_size": 360})";
    vkf::fuzz::write_file((dir / "config.json").string(), reinterpret_cast<const uint8_t*>(config), sizeof config - 1);
    return dir;
  }();
  vkf::fuzz::write_file((d / "tokenizer.json").string(), data, size);
  try {
    const auto t = vkf::model::BartTokenizer::from_tokenizer_json(vkf::ModelFiles(d.string()), 360);
    const auto ids = t->encode("Hello world, 12 \xe6\x97\xa5!");
    for (uint32_t id : ids)
      if (id >= 360) std::abort();  // every id is the model's
    (void)t->decode(ids);
  } catch (const vkf::Error&) {
  }
  return 0;
}

int fuzz_wordpiece(uint8_t what, const uint8_t* data, size_t size) {
  using vkf::model::WordPieceTokenizer;
  static const std::string dir = VKF_SOURCE_DIR "/tests/hf/bert/tokenizer";
  if (what == 7) {
    const fs::path d = fs::path(vkf::fuzz::scratch_dir()) / "wordpiece_vocab";
    fs::create_directories(d);
    vkf::fuzz::write_file((d / "vocab.txt").string(), data, size);
    try {
      const auto t = WordPieceTokenizer::from_vocab_txt(vkf::ModelFiles(d.string()), 4096);
      for (uint32_t id : t->encode("Hello, world! Caf\xc3\xa9 \xe6\x97\xa5"))
        if (id >= t->size()) std::abort();
    } catch (const vkf::Error&) {
    }
    return 0;
  }
  static const auto fast = WordPieceTokenizer::from_tokenizer_json(vkf::ModelFiles(dir), 30522);
  static const auto slow = WordPieceTokenizer::from_vocab_txt(vkf::ModelFiles(dir), 30522);
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  size_t split = size / 2;  // the pair's two texts part at a character's start
  while (split > 0 && (uint8_t(text[split < size ? split : 0]) & 0xC0) == 0x80) --split;
  const std::string_view half = text.substr(0, split), rest = text.substr(split);
  for (const WordPieceTokenizer* t : {fast.get(), slow.get()}) {
    try {
      const auto all = t->encode_one(text);
      const auto cut = t->encode_one(text, 8);
      const auto pair = t->encode_pair(half, rest, 12);
      if (cut.ids.size() > 8 || pair.ids.size() > 12 || pair.types.size() != pair.ids.size()) std::abort();
      for (const auto* ids : {&all.ids, &cut.ids, &pair.ids})
        for (uint32_t id : *ids)
          if (id >= t->size()) std::abort();
      (void)t->decode(all.ids);
    } catch (const vkf::Error&) {
      if (!refusable(text)) std::abort();  // only bad UTF-8 and NUL bytes are refused
    }
  }
  return 0;
}

}  // namespace

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
  if (data[0] == 2 || data[0] == 3) return fuzz_bart(data[0], data + 1, size - 1);
  if (data[0] == 4) return fuzz_tokenizer_json(data + 1, size - 1);
  if (data[0] == 6 || data[0] == 7) return fuzz_wordpiece(data[0], data + 1, size - 1);
  if (data[0] == 5) {
    try {
      vkf::model::check_precompiled_charsmaps(std::string(reinterpret_cast<const char*>(data + 1), size - 1), "fuzz");
    } catch (const vkf::Error&) {
    }
    return 0;
  }
  static const vkf::CharTokenizer dates = vkf::CharTokenizer::from_file(VKF_SOURCE_DIR "/samples/dates/vocab.json");
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  std::vector<uint32_t> encoded;
  try {
    encoded = dates.encode(text);
  } catch (const vkf::Error&) {
    if (!refusable(text)) std::abort();  // the same rule as every tokenizer's
  }
  if (refusable(text) && !encoded.empty()) std::abort();
  for (uint32_t id : encoded)
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
