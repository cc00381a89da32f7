// TextStream (include/vkformer/tokenizer.hpp): streamed text that never takes back what
// it gave. Each push decodes every id so far (byte-level tokens only become text in
// whole characters, and spaces are cleaned up around what follows them) and gives the
// part of it that later ids can no longer change.
#include "vkformer/tokenizer.hpp"

namespace vkf {

namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD: bytes of a character not yet complete

// Where the certain part of `text` ends: before trailing U+FFFDs and before the last
// space (clean-up rewrites " ." and the like once the next token is known).
size_t certain_end(const std::string& text, size_t from) {
  size_t end = text.size();
  while (end >= from + kReplacement.size() && text.compare(end - kReplacement.size(), kReplacement.size(), kReplacement) == 0)
    end -= kReplacement.size();
  const size_t space = end > from ? text.rfind(' ', end - 1) : std::string::npos;
  if (space != std::string::npos && space >= from) end = space;
  return end;
}

}  // namespace

std::string TextStream::push(uint32_t id) {
  ids_.push_back(id);
  const std::string text = tokenizer_.decode(ids_);
  // What was given is a prefix of the text (the certain part never changes); past it,
  // what is certain now.
  if (text.compare(0, given_.size(), given_) != 0) return "";  // not certain after all: wait for finish()
  const size_t end = certain_end(text, given_.size());
  if (end <= given_.size()) return "";
  std::string piece = text.substr(given_.size(), end - given_.size());
  given_ += piece;
  return piece;
}

std::string TextStream::finish() {
  const std::string text = tokenizer_.decode(ids_);
  if (text.compare(0, given_.size(), given_) != 0) return "";  // cannot take back what was given
  std::string rest = text.substr(given_.size());
  given_ = text;
  return rest;
}

}  // namespace vkf
