#pragma once
// A pre-tokenizer's pattern run by Debian's PCRE2: GPT-2's (BART's, GPT-2's tokenizers), or
// a tokenizer.json Split's own (Llama 3's, Qwen2's), cutting text into the words that
// byte-level BPE then spells and merges.
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <string>
#include <string_view>

#include "hf_text.hpp"
#include "vkformer/error.hpp"

namespace vkf::model {

// GPT-2's pattern (the `regex` module's, which BartTokenizer uses). Its \s is Unicode's
// White_Space, spelled out here because PCRE2's \s leaves out U+0085.
class GptPattern {
 public:
  GptPattern() : GptPattern(gpt2(), PCRE2_UTF, false) {}
  // A tokenizer.json Split's own pattern (Rust regex syntax, which PCRE2 reads the same for
  // the hub's patterns), its \s and \d Unicode's as there (PCRE2_UCP); the text between
  // matches is kept as pieces of its own (behavior Isolated).
  explicit GptPattern(const std::string& pattern) : GptPattern(pattern, PCRE2_UTF | PCRE2_UCP, true) {}

 private:
  static std::string gpt2() {
    const std::string space = "\\t\\n\\x0B\\f\\r \\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}";
    return "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^" + space + "\\p{L}\\p{N}]+|[" + space + "]+(?![^" + space +
           "])|[" + space + "]+";
  }
  GptPattern(const std::string& pattern, uint32_t options, bool keep_gaps) : keep_gaps_(keep_gaps) {
    int error = 0;
    PCRE2_SIZE offset = 0;
    code_ = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(), options, &error, &offset, nullptr);
    if (!code_) {
      PCRE2_UCHAR message[256];
      pcre2_get_error_message(error, message, sizeof message);
      throw Error(std::string("tokenizer: PCRE2 cannot compile the pre-tokenizer's pattern (at ") + std::to_string(offset) +
                  "): " + reinterpret_cast<char*>(message));
    }
    pcre2_jit_compile(code_, PCRE2_JIT_COMPLETE);  // where JIT is missing, the interpreter matches the same
  }

 public:
  ~GptPattern() { pcre2_code_free(code_); }
  GptPattern(const GptPattern&) = delete;
  GptPattern& operator=(const GptPattern&) = delete;

  // re.findall: each match in turn, the search going on where the last one ended.
  // `text` must be valid UTF-8 (checked before).
  template <class F>
  void for_each_word(std::string_view text, F&& f) const {
    pcre2_match_data* match = pcre2_match_data_create_from_pattern(code_, nullptr);
    if (!match) throw Error("tokenizer: out of memory");
    PCRE2_SIZE at = 0, gap = 0;  // gap: where the text not yet given to f starts
    while (at < text.size()) {
      const int rc = pcre2_match(code_, reinterpret_cast<PCRE2_SPTR>(text.data()), text.size(), at, PCRE2_NO_UTF_CHECK,
                                 match, nullptr);
      if (rc == PCRE2_ERROR_NOMATCH) break;
      if (rc < 0) {
        pcre2_match_data_free(match);
        throw Error("tokenizer: PCRE2 failed to match (error " + std::to_string(rc) + ")");
      }
      const PCRE2_SIZE* span = pcre2_get_ovector_pointer(match);
      if (span[1] == span[0]) {  // an empty match: GPT-2's pattern has none; a file's may
        if (!keep_gaps_) break;
        size_t n = 0;
        utf8_code_point(text, span[0], &n);  // step over one character, kept with the gap
        at = span[0] + n;
        continue;
      }
      if (keep_gaps_ && span[0] > gap) f(text.substr(gap, span[0] - gap));
      f(text.substr(span[0], span[1] - span[0]));
      at = gap = span[1];
    }
    if (keep_gaps_ && gap < text.size()) f(text.substr(gap));
    pcre2_match_data_free(match);
  }

 private:
  pcre2_code* code_ = nullptr;
  bool keep_gaps_ = false;
};

}  // namespace vkf::model
