#pragma once
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "bounded_json.hpp"
#include "vkformer/error.hpp"
#include "vkformer/model_files.hpp"

namespace vkf::model {

// The largest config-sized JSON file read (config.json, generation_config.json,
// tokenizer_config.json, a checkpoint's index): real ones are a few KB, and the largest
// seen on the hub (ViT configs with 21,843 class labels, indexes of checkpoints with
// thousands of tensors) stay under 2 MiB. Parsed JSON takes about 10 times its text in
// memory, so a hostile file costs at most ~40 MiB before it is refused.
constexpr uint64_t kConfigFileBytes = 4ull << 20;

// A vocabulary's file for `tokens` entries: 1 KiB an entry (a token is a few bytes even
// JSON-escaped; 1 KiB leaves room for any real one) and 64 KiB of slack, so that the
// file's size, not its parse, refuses a vocabulary far larger than the model's.
inline uint64_t vocab_file_bytes(uint64_t tokens) { return (64ull << 10) + tokens * 1024; }

// A JSON object from a model's file of at most `max_bytes`; errors say "<what> <where>:
// ..." (missing, unreadable, too large, bad JSON, not an object).
inline nlohmann::json read_json_object(const ModelFiles& files, const std::string& name, const char* what,
                                       uint64_t max_bytes = kConfigFileBytes) {
  const std::string text = files.read(name, what, max_bytes);
  auto fail = [&](const std::string& why) { throw Error(std::string(what) + " " + files.where(name) + ": " + why); };
  nlohmann::json j;
  try {
    j = json_limits::parse(text);  // nesting bounded before anything is built
  } catch (const json_limits::TooDeep& e) {
    fail(e.what());
  } catch (const std::exception& e) {
    fail(std::string("is not valid JSON: ") + e.what());
  }
  if (!j.is_object()) fail("is not a JSON object");
  return j;
}

// The same for a file given by its path.
inline nlohmann::json read_json_object(const std::string& path, const char* what, uint64_t max_bytes = kConfigFileBytes) {
  const std::filesystem::path p(path);
  return read_json_object(ModelFiles(p.parent_path().string()), p.filename().string(), what, max_bytes);
}

}  // namespace vkf::model
