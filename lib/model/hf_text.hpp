#pragma once
// Text rules transformers' slow tokenizers rely on, written once for Marian's and BART's:
// Python's str.isspace, bytes.decode("utf-8", errors="replace"), and
// clean_up_tokenization. Strings are UTF-8 throughout.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

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

}  // namespace vkf::model
