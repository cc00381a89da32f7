// Tokenizer::encode: the text rules every tokenizer shares, before its own encoding.
#include <algorithm>

#include "hf_text.hpp"
#include "vkformer/error.hpp"
#include "vkformer/tokenizer.hpp"

namespace vkf {

std::vector<uint32_t> Tokenizer::encode(std::string_view utf8) const {
  // transformers takes a Python str, which cannot hold broken UTF-8 (SentencePiece would
  // quietly read it as U+FFFD, a character vocabulary as unknown characters); a NUL
  // would end the same text passed through the C API, so it is no text of a model's.
  if (const size_t bad = model::invalid_utf8_at(utf8); bad != std::string_view::npos)
    fail_invalid_input("tokenizer: the text is not valid UTF-8 (byte " + std::to_string(bad) + ")");
  if (const size_t nul = utf8.find('\0'); nul != std::string_view::npos)
    throw Error("tokenizer: the text holds a NUL byte (byte " + std::to_string(nul) + ")");
  return encode_valid(utf8);
}

size_t Tokenizer::text_bytes_for(uint32_t positions) const {
  size_t longest = longest_token_bytes_.bytes.load();
  if (!longest) {
    longest = 4;  // a character, whatever the vocabulary (an unknown one is one token)
    for (uint32_t id = 0; id < size(); ++id) longest = std::max(longest, decode({id}).size());
    longest += 4;  // a normaliser's mark or a leading space the decode leaves out
    longest_token_bytes_.bytes = longest;
  }
  return size_t(positions) * longest + 64;
}

}  // namespace vkf
