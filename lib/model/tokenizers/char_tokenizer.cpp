#include <filesystem>

#include "hf_text.hpp"
#include "json_file.hpp"

#include "vkformer/error.hpp"
#include "vkformer/tokenizer.hpp"

namespace vkf {

namespace {
// Length of the UTF-8 sequence starting with byte c (1 for stray continuation bytes).
size_t utf8_length(unsigned char c) {
  if (c >= 0xF0) return 4;
  if (c >= 0xE0) return 3;
  if (c >= 0xC0) return 2;
  return 1;
}
}  // namespace

CharTokenizer CharTokenizer::from_file(const std::string& path, uint32_t max_tokens) {
  const std::filesystem::path p(path);
  return from_file(ModelFiles(p.parent_path().string()), p.filename().string(), max_tokens);
}

CharTokenizer CharTokenizer::from_file(const ModelFiles& files, const std::string& name, uint32_t max_tokens) {
  const std::string path = files.where(name);
  auto fail = [&](const std::string& why) -> void { throw Error("tokenizer " + path + ": " + why); };
  const nlohmann::json j = model::read_json_object(files, name, "tokenizer", model::vocab_file_bytes(max_tokens));
  // (Checked by type first: json::value() throws the JSON library's own error when
  // "type" is not a string, which fuzzing found.)
  const bool characters = j.contains("type") && j["type"].is_string() && j["type"] == "characters";
  if (!characters || !j.contains("tokens") || !j["tokens"].is_array())
    fail("expected {\"type\": \"characters\", \"tokens\": [...]}");
  if (j["tokens"].size() > max_tokens)
    fail(std::to_string(j["tokens"].size()) + " tokens, more than the model's vocabulary of " +
         std::to_string(max_tokens) + " (config.json)");
  CharTokenizer t;
  for (auto& tok : j["tokens"]) {
    if (!tok.is_string()) fail("every token must be a string");
    const std::string text = tok.get<std::string>();
    if (text.empty() || model::invalid_utf8_at(text) != std::string::npos || text.find('\0') != std::string::npos)
      fail("token " + std::to_string(t.tokens_.size()) + " is empty, not valid UTF-8 or holds a NUL byte");
    if (!t.index_.emplace(text, uint32_t(t.tokens_.size())).second)
      fail("the token '" + text + "' is listed twice (ids " + std::to_string(t.index_[text]) + " and " +
           std::to_string(t.tokens_.size()) + ")");
    t.tokens_.push_back(text);
  }
  // A special id names a token of its own ("<unk>"), never a character of the text:
  // unknown characters would become that character, and decoding would drop it.
  auto special = [&](const char* key, std::initializer_list<const char*> names) {
    uint32_t id = 0;
    if (j.contains(key)) {
      const auto& v = j[key];
      if (!v.is_number_unsigned() || v.get<uint64_t>() >= t.tokens_.size())
        fail(std::string("field '") + key + "' must be a token id from 0 to " + std::to_string(t.tokens_.size() - 1) +
             ", got " + json_limits::shown(v));
      id = v.get<uint32_t>();
    } else {
      auto it = t.index_.end();
      for (const char* name : names)
        if (it == t.index_.end()) it = t.index_.find(name);
      if (it == t.index_.end())
        fail(std::string("no field '") + key + "' and no " + *names.begin() + " token to take for it");
      id = it->second;
    }
    const std::string& token = t.tokens_[id];
    size_t n = 0;
    if (model::utf8_code_point(token, 0, &n) && n == token.size())
      fail(std::string("field '") + key + "' is " + std::to_string(id) + ", the character '" + token +
           "': a special token must be a token of its own, such as " + *names.begin());
    return id;
  };
  t.pad_ = special("pad_id", {"<pad>"});
  t.bos_ = special("bos_id", {"<bos>", "<s>"});
  t.eos_ = special("eos_id", {"<eos>", "</s>"});
  t.unk_ = special("unk_id", {"<unk>"});
  return t;
}

std::vector<uint32_t> CharTokenizer::encode_valid(std::string_view text) const {
  std::vector<uint32_t> ids;
  for (size_t i = 0; i < text.size();) {
    const size_t n = std::min(utf8_length(static_cast<unsigned char>(text[i])), text.size() - i);
    auto it = index_.find(std::string(text.substr(i, n)));
    ids.push_back(it == index_.end() ? unk_ : it->second);
    i += n;
  }
  return ids;
}

std::string CharTokenizer::decode(const std::vector<uint32_t>& ids) const {
  std::string out;
  for (uint32_t id : ids) {
    if (id == eos_) break;
    if (id == pad_ || id == bos_ || id == unk_ || id >= tokens_.size()) continue;
    out += tokens_[id];
  }
  return out;
}

}  // namespace vkf
