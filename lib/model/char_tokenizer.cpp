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

CharTokenizer CharTokenizer::from_file(const std::string& path) {
  const nlohmann::json j = model::read_json_object(path, "tokenizer");
  // (Checked by type first: json::value() throws the JSON library's own error when
  // "type" is not a string, which fuzzing found.)
  const bool characters = j.contains("type") && j["type"].is_string() && j["type"] == "characters";
  if (!characters || !j.contains("tokens") || !j["tokens"].is_array())
    throw Error("tokenizer " + path + ": expected {\"type\": \"characters\", \"tokens\": [...]}");
  CharTokenizer t;
  for (auto& tok : j["tokens"]) {
    if (!tok.is_string()) throw Error("tokenizer " + path + ": every token must be a string");
    t.index_.emplace(tok.get<std::string>(), uint32_t(t.tokens_.size()));
    t.tokens_.push_back(tok.get<std::string>());
  }
  auto special = [&](const char* key, uint32_t fallback) {
    if (!j.contains(key)) return fallback;
    const auto& v = j[key];
    if (!v.is_number_unsigned() || v.get<uint64_t>() > UINT32_MAX)
      throw Error("tokenizer " + path + ": field '" + key + "' must be a token id (an integer from 0), got " + v.dump());
    return v.get<uint32_t>();
  };
  t.pad_ = special("pad_id", 0);
  t.bos_ = special("bos_id", 1);
  t.eos_ = special("eos_id", 2);
  t.unk_ = special("unk_id", 3);
  if (std::max({t.pad_, t.bos_, t.eos_, t.unk_}) >= t.tokens_.size())
    throw Error("tokenizer " + path + ": a special token id is outside the vocabulary");
  return t;
}

std::vector<uint32_t> CharTokenizer::encode(std::string_view text) const {
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
