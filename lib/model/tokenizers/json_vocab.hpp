#pragma once
// tokenizer.json's model.vocab (token -> id), read once for every model type that keeps
// one (BPE, WordPiece): ids from 0 to its size - 1, each given once, within the model's
// vocabulary (config.json), checked before the tables grow.
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <unordered_map>
#include <vector>

#include "bounded_json.hpp"

namespace vkf::model {

// tokens[id] and ids[token]; fail(what) throws, naming the file.
inline void read_json_vocab(const nlohmann::json& model, uint32_t vocab_size,
                            const std::function<void(const std::string&)>& fail, std::vector<std::string>& tokens,
                            std::unordered_map<std::string, uint32_t>& ids) {
  if (!model.contains("vocab") || !model["vocab"].is_object()) fail("model.vocab must be an object of token ids");
  const nlohmann::json& vocab = model["vocab"];
  if (vocab.size() > vocab_size)
    fail(std::to_string(vocab.size()) + " tokens, more than the model's vocabulary of " + std::to_string(vocab_size) +
         " (config.json)");
  tokens.assign(vocab.size(), std::string());
  for (const auto& [token, id] : vocab.items()) {
    if (!id.is_number_unsigned() || id.get<uint64_t>() >= vocab.size())
      fail("the id of '" + json_limits::shown(token, 40) + "' must be an integer from 0 to " + std::to_string(vocab.size() - 1));
    const uint32_t i = id.get<uint32_t>();
    if (!tokens[i].empty() || token.empty()) fail("id " + std::to_string(i) + " is given twice, or to an empty token");
    tokens[i] = token;
    ids[token] = i;
  }
}

}  // namespace vkf::model
