#include "hf_text.hpp"

#include <cstring>
#include <utility>

namespace vkf::model {

bool python_isspace(char32_t c) {
  if (c <= 0x20) return c == 0x20 || (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x1F);
  return c == 0x85 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 ||
         c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

namespace {

// The length of the well-formed sequence that starts at `at` (1 to 4), or, when it is
// ill-formed, minus the length of its maximal ill-formed part (Unicode 3.9, table 3-7).
int sequence_at(std::string_view s, size_t at) {
  const auto b = uint8_t(s[at]);
  if (b < 0x80) return 1;
  int need;
  uint8_t lo = 0x80, hi = 0xBF;  // the bounds of the second byte; later ones are 80..BF
  if (b >= 0xC2 && b <= 0xDF) need = 1;
  else if (b == 0xE0) need = 2, lo = 0xA0;
  else if (b == 0xED) need = 2, hi = 0x9F;  // no surrogates
  else if (b >= 0xE1 && b <= 0xEF) need = 2;
  else if (b == 0xF0) need = 3, lo = 0x90;
  else if (b >= 0xF1 && b <= 0xF3) need = 3;
  else if (b == 0xF4) need = 3, hi = 0x8F;  // nothing past U+10FFFF
  else return -1;                            // 80..C1, F5..FF never start a sequence
  int got = 0;
  for (; got < need && at + 1 + got < s.size(); ++got) {
    const auto c = uint8_t(s[at + 1 + got]);
    if (c < (got == 0 ? lo : 0x80) || c > (got == 0 ? hi : 0xBF)) break;
  }
  return got == need ? need + 1 : -(got + 1);
}

}  // namespace

size_t invalid_utf8_at(std::string_view text) {
  for (size_t at = 0; at < text.size();) {
    const int n = sequence_at(text, at);
    if (n < 0) return at;
    at += size_t(n);
  }
  return std::string_view::npos;
}

std::string decode_utf8_replacing(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  for (size_t at = 0; at < bytes.size();) {
    const int n = sequence_at(bytes, at);
    if (n > 0) out.append(bytes.substr(at, size_t(n)));
    else out.append("\xEF\xBF\xBD");  // U+FFFD
    at += size_t(n > 0 ? n : -n);
  }
  return out;
}

char32_t utf8_code_point(std::string_view s, size_t at, size_t* length) {
  const auto b = uint8_t(s[at]);
  const size_t n = b < 0x80 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4;
  char32_t c = n == 1 ? b : n == 2 ? b & 0x1F : n == 3 ? b & 0x0F : b & 0x07;
  for (size_t i = 1; i < n; ++i) c = (c << 6) | (uint8_t(s[at + i]) & 0x3F);
  *length = n;
  return c;
}

void append_utf8(std::string& out, char32_t c) {
  if (c < 0x80) {
    out += char(c);
  } else if (c < 0x800) {
    out += char(0xC0 | (c >> 6));
    out += char(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    out += char(0xE0 | (c >> 12));
    out += char(0x80 | ((c >> 6) & 0x3F));
    out += char(0x80 | (c & 0x3F));
  } else {
    out += char(0xF0 | (c >> 18));
    out += char(0x80 | ((c >> 12) & 0x3F));
    out += char(0x80 | ((c >> 6) & 0x3F));
    out += char(0x80 | (c & 0x3F));
  }
}

std::string_view rstrip_python(std::string_view text) {
  size_t keep = 0;  // the end of the last code point that is not a space
  for (size_t at = 0, n = 0; at < text.size(); at += n)
    if (!python_isspace(utf8_code_point(text, at, &n))) keep = at + n;
  return text.substr(0, keep);
}

std::string_view strip_python(std::string_view text) {
  text = rstrip_python(text);
  size_t at = 0;
  for (size_t n = 0; at < text.size() && python_isspace(utf8_code_point(text, at, &n)); at += n) {}
  return text.substr(at);
}

std::string clean_up_tokenization(std::string s) {
  // str.replace, one rule after the other: matches do not overlap, and the search goes
  // on after the text just put in.
  static const std::pair<const char*, const char*> kRules[] = {
      {" .", "."}, {" ?", "?"}, {" !", "!"}, {" ,", ","}, {" ' ", "'"}, {" n't", "n't"},
      {" 'm", "'m"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"}};
  // Each rule in one pass that copies (a replace in place moves the whole tail each time:
  // quadratic on a long run of " ." pieces).
  for (const auto& [from, to] : kRules) {
    const size_t n = std::strlen(from);
    size_t at = s.find(from);
    if (at == std::string::npos) continue;
    std::string out;
    out.reserve(s.size());
    size_t done = 0;
    for (; at != std::string::npos; at = s.find(from, done)) {
      out.append(s, done, at - done);
      out += to;
      done = at + n;
    }
    out.append(s, done, std::string::npos);
    s.swap(out);
  }
  return s;
}

void split_at_special_tokens(std::string_view text, const std::vector<SpecialToken>& specials,
                             const std::function<void(std::string_view)>& encode_text, std::vector<uint32_t>& ids) {
  while (!text.empty()) {
    size_t at = std::string_view::npos;
    const SpecialToken* found = nullptr;
    for (const auto& s : specials) {
      const size_t p = text.find(s.text);
      if (p != std::string_view::npos && (p < at || (p == at && s.text.size() > found->text.size()))) at = p, found = &s;
    }
    if (!found) {
      encode_text(text);
      return;
    }
    std::string_view before = text.substr(0, at);
    if (found->strip_left) before = rstrip_python(before);
    if (!before.empty()) encode_text(before);
    ids.push_back(found->id);
    text = text.substr(at + found->text.size());
  }
}

}  // namespace vkf::model
