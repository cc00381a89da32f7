#pragma once
// A character tokenizer: vocab.json lists one token per UTF-8 character, after the
// special tokens. Enough for the sample models; SentencePiece models can follow.
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace vkf {

class CharTokenizer {
 public:
  static CharTokenizer from_file(const std::string& vocab_json);  // throws vkf::Error

  // Characters outside the vocabulary become unk_id.
  std::vector<uint32_t> encode(std::string_view utf8) const;
  // Stops at EOS; skips the other special tokens.
  std::string decode(const std::vector<uint32_t>& ids) const;
  uint32_t size() const { return uint32_t(tokens_.size()); }
  uint32_t unk_id() const { return unk_; }

 private:
  std::vector<std::string> tokens_;
  std::unordered_map<std::string, uint32_t> index_;
  uint32_t pad_ = 0, bos_ = 1, eos_ = 2, unk_ = 3;
};

}  // namespace vkf
