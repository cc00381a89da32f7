#pragma once
// Text rules transformers' slow tokenizers rely on, written once for Marian's and BART's:
// Python's str.isspace, bytes.decode("utf-8", errors="replace"), and
// clean_up_tokenization. Strings are UTF-8 throughout.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace vkf::model {

// Python's str.isspace for one code point: Unicode's White_Space and the four
// separators U+001C..U+001F that Python counts as well.
bool python_isspace(char32_t c);

// The offset of the first byte that does not begin a well-formed UTF-8 sequence, or
// npos when all of `text` is valid (Python's str holds nothing else).
size_t invalid_utf8_at(std::string_view text);

// bytes.decode("utf-8", errors="replace"): each maximal ill-formed part becomes one U+FFFD,
// as CPython (and Unicode's recommended practice) does.
std::string decode_utf8_replacing(std::string_view bytes);

// The code point that starts at `at` in valid UTF-8, and its length in bytes.
char32_t utf8_code_point(std::string_view text, size_t at, size_t* length);
void append_utf8(std::string& out, char32_t c);

// Python's str.rstrip() and str.strip() with no argument.
std::string_view rstrip_python(std::string_view text);
std::string_view strip_python(std::string_view text);

// transformers' clean_up_tokenization (tokenizers' default): no space before . ? ! , and
// the English clitics.
std::string clean_up_tokenization(std::string text);

// A special token that text may hold literally (transformers' added tokens).
// strip_left: it takes the whitespace before it (AddedToken's lstrip, BART's <mask>).
struct SpecialToken {
  std::string text;
  uint32_t id;
  bool strip_left = false;
};

// transformers' added-tokens split: the special tokens written in `text` become their ids
// (the earliest first, the longest where several start at one place), and the non-empty
// text between them goes to `encode_text`, which appends its ids.
void split_at_special_tokens(std::string_view text, const std::vector<SpecialToken>& specials,
                             const std::function<void(std::string_view)>& encode_text, std::vector<uint32_t>& ids);

}  // namespace vkf::model
