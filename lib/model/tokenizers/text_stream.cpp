// TextStream (include/vkformer/tokenizer.hpp): streamed text that never takes back what
// it gave. Each push decodes a short window of the latest ids (byte-level tokens only
// become text in whole characters, and spaces are cleaned up around what follows them)
// and gives the part of it that later ids can no longer change.
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

std::optional<std::string> TextStream::window_text() const {
  std::string text = tokenizer_.decode(std::vector<uint32_t>(ids_.begin() + long(context_), ids_.end()));
  if (text.compare(0, context_text_.size(), context_text_) != 0) return std::nullopt;
  return text.substr(context_text_.size());
}

std::string TextStream::push(uint32_t id) {
  ids_.push_back(id);
  // What was given is a prefix of the text (the certain part never changes); past it,
  // what is certain now.
  auto consistent = [&](const std::string& text) {
    return text.compare(0, window_given_, given_, given_.size() - window_given_, window_given_) == 0;
  };
  std::optional<std::string> text = window_text();
  bool last_known = true;  // last_text_ is the window's text before this id
  if (!text || !consistent(*text)) {
    if (start_ == 0) return "";  // not certain after all: wait for finish()
    context_ = start_ = 0;       // the window disagrees with itself: decode every id, as finish() will
    context_text_.clear();
    window_given_ = given_.size();
    last_known = false;
    text = window_text();
    if (!consistent(*text)) return "";
  }
  std::string piece;
  const size_t end = certain_end(*text, window_given_);
  if (end > window_given_) {
    piece = text->substr(window_given_, end - window_given_);
    given_ += piece;
    window_given_ += piece.size();
  }
  // Every id before the newest is given: the window restarts at the newest, with the one
  // before as context when that has text of its own (SentencePiece's "▁" alone decodes to
  // "", and the space it stands for would be lost at the start of a window).
  bool restarted = false;
  if (last_known && ids_.size() - start_ >= 2 && window_given_ >= last_text_.size() &&
      text->compare(0, last_text_.size(), last_text_) == 0) {
    const size_t n = ids_.size();
    std::string context = tokenizer_.decode({ids_[n - 2]});
    if (context.find_first_not_of(" \t\n") != std::string::npos) {
      window_given_ -= last_text_.size();
      last_text_ = text->substr(last_text_.size());
      context_ = n - 2;
      start_ = n - 1;
      context_text_ = std::move(context);
      restarted = true;
    }
  }
  if (!restarted) last_text_ = *text;
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
