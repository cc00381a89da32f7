#pragma once
// A pre-tokenizer's pattern run by Debian's PCRE2: GPT-2's (BART's, GPT-2's tokenizers), or
// a tokenizer.json Split's own (Llama 3's, Qwen2's), cutting text into the words that
// byte-level BPE then spells and merges.
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <chrono>
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
  // `source` (the file) names it in errors.
  GptPattern(const std::string& pattern, const std::string& source)
      : GptPattern(pattern, PCRE2_UTF | PCRE2_UCP, true) {
    source_ = source;
    shown_ = pattern.size() > 60 ? pattern.substr(0, 60) + "..." : pattern;
  }

  // The work one text may cost: a pattern from a file may backtrack without bound (PCRE2's
  // default limits stop only the worst of it), so each match is bounded in steps and
  // depth, and the whole text in time; past either, an error names the file and pattern.
  static constexpr uint32_t kMatchLimit = 1000000, kDepthLimit = 10000;
  static constexpr double kSecondsPerText = 1.0;

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
    context_ = pcre2_match_context_create(nullptr);
    if (!context_) throw Error("tokenizer: out of memory");
    pcre2_set_match_limit(context_, kMatchLimit);
    pcre2_set_depth_limit(context_, kDepthLimit);
  }

  [[noreturn]] void too_costly(const std::string& why) const {
    throw Error("tokenizer " + source_ + ": the pre-tokenizer's pattern '" + shown_ + "' " + why +
                    " (a pattern this costly is refused rather than left to run)",
                ErrorKind::InvalidInput);
  }

 public:
  ~GptPattern() {
    pcre2_match_context_free(context_);
    pcre2_code_free(code_);
  }
  GptPattern(const GptPattern&) = delete;
  GptPattern& operator=(const GptPattern&) = delete;

  // re.findall: each match in turn, the search going on where the last one ended.
  // `text` must be valid UTF-8 (checked before).
  template <class F>
  void for_each_word(std::string_view text, F&& f) const {
    pcre2_match_data* match = pcre2_match_data_create_from_pattern(code_, nullptr);
    if (!match) throw Error("tokenizer: out of memory");
    PCRE2_SIZE at = 0, gap = 0;  // gap: where the text not yet given to f starts
    const auto started = std::chrono::steady_clock::now();
    for (uint32_t matches = 0; at < text.size(); ++matches) {
      const int rc = pcre2_match(code_, reinterpret_cast<PCRE2_SPTR>(text.data()), text.size(), at, PCRE2_NO_UTF_CHECK,
                                 match, context_);
      if (rc == PCRE2_ERROR_NOMATCH) break;
      if (rc < 0) {
        pcre2_match_data_free(match);
        if (rc == PCRE2_ERROR_MATCHLIMIT || rc == PCRE2_ERROR_DEPTHLIMIT || rc == PCRE2_ERROR_HEAPLIMIT)
          too_costly("needs more than " + std::to_string(kMatchLimit) + " steps for one match at byte " +
                     std::to_string(at) + " of this text (PCRE2 error " + std::to_string(rc) + ")");
        PCRE2_UCHAR message[256];
        pcre2_get_error_message(rc, message, sizeof message);
        throw Error("tokenizer " + source_ + ": PCRE2 failed to match the pre-tokenizer's pattern '" + shown_ +
                    "': " + reinterpret_cast<char*>(message));
      }
      if (matches % 256 == 255 && std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count() >
                                      kSecondsPerText) {
        pcre2_match_data_free(match);
        too_costly("took more than " + std::to_string(int(kSecondsPerText)) + " s on " + std::to_string(text.size()) +
                   " bytes of text (stopped at byte " + std::to_string(at) + ")");
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
  pcre2_match_context* context_ = nullptr;
  bool keep_gaps_ = false;
  std::string source_ = "(GPT-2's pattern)", shown_ = "GPT-2's";
};

}  // namespace vkf::model
