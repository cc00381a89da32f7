// WordPieceTokenizer: BERT's text rules and greedy longest-match WordPiece (see the header).
#include "wordpiece_tokenizer.hpp"

#include <utf8proc.h>

#include <algorithm>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "json_file.hpp"
#include "json_vocab.hpp"
#include "vkformer/error.hpp"

namespace vkf::model {

namespace {

std::u32string to_u32(std::string_view utf8) {
  std::u32string out;
  out.reserve(utf8.size());
  for (size_t at = 0, n = 0; at < utf8.size(); at += n) out += utf8_code_point(utf8, at, &n);
  return out;
}

std::string to_utf8(const char32_t* s, size_t n) {
  std::string out;
  out.reserve(n);
  for (size_t i = 0; i < n; ++i) append_utf8(out, s[i]);
  return out;
}
std::string to_utf8(const std::u32string& s) { return to_utf8(s.data(), s.size()); }

// utf8proc_map over UTF-8 that holds no NUL (Tokenizer::encode refused NUL bytes).
std::u32string mapped(const std::u32string& text, utf8proc_option_t options) {
  const std::string utf8 = to_utf8(text);
  utf8proc_uint8_t* out = nullptr;
  const utf8proc_ssize_t n =
      utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(utf8.data()), utf8proc_ssize_t(utf8.size()), &out, options);
  if (n < 0) throw Error(std::string("tokenizer: Unicode normalization failed: ") + utf8proc_errmsg(n), ErrorKind::OutOfMemory);
  std::u32string result = to_u32(std::string_view(reinterpret_cast<const char*>(out), size_t(n)));
  std::free(out);
  return result;
}

utf8proc_category_t category(char32_t c) { return utf8proc_category(utf8proc_int32_t(c)); }

// BERT's control characters: Unicode's C* categories (Cc, Cf, Cs, Co, Cn), but not the
// tab, newline and carriage return, which are whitespace.
bool is_control(char32_t c) {
  if (c == U'\t' || c == U'\n' || c == U'\r') return false;
  switch (category(c)) {
    case UTF8PROC_CATEGORY_CC: case UTF8PROC_CATEGORY_CF: case UTF8PROC_CATEGORY_CS:
    case UTF8PROC_CATEGORY_CO: case UTF8PROC_CATEGORY_CN: return true;
    default: return false;
  }
}

// BERT's punctuation: the ASCII symbols (33-47, 58-64, 91-96, 123-126: "$", "+", "^" are
// not P* in Unicode) besides Unicode's P* categories.
bool is_punctuation(char32_t c) {
  if ((c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) || (c >= 123 && c <= 126)) return true;
  switch (category(c)) {
    case UTF8PROC_CATEGORY_PC: case UTF8PROC_CATEGORY_PD: case UTF8PROC_CATEGORY_PS: case UTF8PROC_CATEGORY_PE:
    case UTF8PROC_CATEGORY_PI: case UTF8PROC_CATEGORY_PF: case UTF8PROC_CATEGORY_PO: return true;
    default: return false;
  }
}

// The CJK Unified Ideographs blocks BERT spaces out (its own list, not all of CJK).
bool is_chinese(char32_t c) {
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x20000 && c <= 0x2A6DF) ||
         (c >= 0x2A700 && c <= 0x2B73F) || (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B820 && c <= 0x2CEAF) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

// Full lower-case mapping, as Python's str.lower and Rust's char::to_lowercase give it
// character by character: utf8proc's simple mapping, and the one unconditional entry of
// SpecialCasing.txt that maps to two characters, U+0130 (I with a dot above) to i and
// U+0307. (BertTokenizer lower-cases one character at a time, so Final_Sigma's context
// never applies: Σ becomes σ in both tokenizers.)
void append_lower(std::u32string& out, char32_t c) {
  if (c == 0x130) {
    out += U'i';
    out += char32_t(0x307);
  } else {
    out += char32_t(utf8proc_tolower(utf8proc_int32_t(c)));
  }
}

std::u32string lowered(const std::u32string& s) {
  std::u32string out;
  out.reserve(s.size());
  for (char32_t c : s) append_lower(out, c);
  return out;
}

// NFD, then no nonspacing marks (Mn).
std::u32string accents_stripped(const std::u32string& s) {
  std::u32string out;
  for (char32_t c : mapped(s, utf8proc_option_t(UTF8PROC_STABLE | UTF8PROC_DECOMPOSE)))
    if (category(c) != UTF8PROC_CATEGORY_MN) out += c;
  return out;
}

// Words at whitespace, each punctuation character a word of its own.
void split_words(const std::u32string& s, std::vector<std::u32string>& words, bool split_punctuation = true) {
  std::u32string word;
  auto flush = [&] {
    if (!word.empty()) words.push_back(std::move(word)), word.clear();
  };
  for (char32_t c : s) {
    if (python_isspace(c)) {
      flush();
    } else if (split_punctuation && is_punctuation(c)) {
      flush();
      words.push_back(std::u32string(1, c));
    } else {
      word += c;
    }
  }
  flush();
}

// A special token's name in tokenizer_config.json: a string or an AddedToken's dict.
std::string token_name(const nlohmann::json& c, const char* key, const char* fallback) {
  if (!c.contains(key) || c[key].is_null()) return fallback;
  if (c[key].is_string()) return c[key].get<std::string>();
  if (c[key].is_object() && c[key].contains("content") && c[key]["content"].is_string()) return c[key]["content"];
  throw json_limits::WrongType(std::string("field '") + key + "' must be a token's text");
}

}  // namespace

void WordPieceTokenizer::finish(const std::string& file) {
  for (size_t i = 0; i < tokens_.size(); ++i) {
    size_t chars = 0;
    for (unsigned char b : tokens_[i]) chars += (b & 0xC0) != 0x80;
    longest_token_chars_ = std::max(longest_token_chars_, chars);
  }
  special_.assign(tokens_.size(), false);
  for (const SpecialToken& s : specials_) special_[s.id] = true;
  for (uint32_t id : {unk_, cls_, sep_, pad_})
    if (id >= tokens_.size()) throw Error("tokenizer " + file + ": a special token's id is outside the vocabulary");
}

std::unique_ptr<WordPieceTokenizer> WordPieceTokenizer::for_model(const ModelFiles& files, uint32_t vocab_size) {
  if (files.has("tokenizer.json")) return from_tokenizer_json(files, vocab_size);
  return from_vocab_txt(files, vocab_size);
}

std::unique_ptr<WordPieceTokenizer> WordPieceTokenizer::from_tokenizer_json(const ModelFiles& files, uint32_t vocab_size) try {
  const std::string file = files.where("tokenizer.json");
  const nlohmann::json j = read_json_object(files, "tokenizer.json", "tokenizer", 2 * vocab_file_bytes(vocab_size));
  auto fail = [&](const std::string& what) -> void { throw Error("tokenizer " + file + ": " + what); };
  auto type_of = [](const nlohmann::json& v) { return v.is_object() ? json_limits::field(v, "type", std::string()) : std::string(); };
  std::unique_ptr<WordPieceTokenizer> t(new WordPieceTokenizer());
  t->source_ = "tokenizer.json";

  const nlohmann::json none;
  const nlohmann::json& model = j.contains("model") ? j["model"] : none;
  if (type_of(model) != "WordPiece") fail("model type '" + type_of(model) + "' is not WordPiece");
  t->prefix_ = json_limits::field(model, "continuing_subword_prefix", std::string("##"));
  t->max_word_chars_ = json_limits::field(model, "max_input_chars_per_word", uint64_t(100));
  read_json_vocab(model, vocab_size, fail, t->tokens_, t->ids_);
  for (size_t i = 0; i < t->tokens_.size(); ++i)
    if (t->tokens_[i].empty()) fail("id " + std::to_string(i) + " has no token (the ids must number the tokens)");
  const std::string unk = json_limits::field(model, "unk_token", std::string("[UNK]"));
  if (!t->ids_.count(unk)) fail("model.unk_token '" + unk + "' is not a token");
  t->unk_ = t->ids_.at(unk);

  const nlohmann::json& norm = j.contains("normalizer") ? j["normalizer"] : none;
  if (type_of(norm) != "BertNormalizer")
    fail("normalizer '" + (norm.is_null() ? std::string("none") : type_of(norm)) +
         "' is not supported with WordPiece (vkformer reads BertNormalizer)");
  BertTextRules& r = t->rules_;
  r.clean_text = json_limits::field(norm, "clean_text", true);
  r.chinese_chars = json_limits::field(norm, "handle_chinese_chars", true);
  r.lowercase = json_limits::field(norm, "lowercase", true);
  r.strip_accents = norm.contains("strip_accents") && !norm["strip_accents"].is_null()
                        ? json_limits::field(norm, "strip_accents", false) : r.lowercase;
  if (type_of(json_limits::field(j, "pre_tokenizer", nlohmann::json())) != "BertPreTokenizer")
    fail("pre_tokenizer '" + type_of(json_limits::field(j, "pre_tokenizer", nlohmann::json())) +
         "' is not supported with WordPiece (vkformer reads BertPreTokenizer)");
  const nlohmann::json decoder = json_limits::field(j, "decoder", nlohmann::json());
  if (!decoder.is_null()) {
    if (type_of(decoder) != "WordPiece") fail("decoder '" + type_of(decoder) + "' is not WordPiece");
    t->cleanup_ = json_limits::field(decoder, "cleanup", true);
  }

  if (j.contains("added_tokens") && j["added_tokens"].is_array())
    for (const auto& a : j["added_tokens"]) {
      if (!a.is_object() || !a.contains("id") || !a["id"].is_number_unsigned() || !a.contains("content") ||
          !a["content"].is_string() || a["content"] == "")
        fail("an added token needs an integer id and a non-empty content");
      const std::string content = a["content"];
      if (json_limits::field(a, "single_word", false) || json_limits::field(a, "rstrip", false) ||
          json_limits::field(a, "normalized", false))
        fail("added token '" + json_limits::shown(a["content"], 40) +
             "' has single_word, rstrip or normalized set, which vkformer does not run");
      const auto it = t->ids_.find(content);
      if (it == t->ids_.end() || it->second != a["id"].get<uint64_t>())
        fail("added token '" + json_limits::shown(a["content"], 40) + "' is not the vocabulary's token of id " + a["id"].dump());
      t->specials_.push_back({content, it->second, json_limits::field(a, "lstrip", false)});
    }

  // [CLS] $A [SEP] (and [CLS] $A [SEP] $B [SEP]): BertProcessing, or TemplateProcessing
  // in that shape; the special tokens' ids from it.
  const nlohmann::json& post = j.contains("post_processor") ? j["post_processor"] : none;
  auto id_of = [&](const std::string& token) {
    if (!t->ids_.count(token)) fail("post_processor names '" + token + "', which is not a token");
    return t->ids_.at(token);
  };
  if (type_of(post) == "BertProcessing") {
    for (const char* key : {"cls", "sep"})
      if (!post.contains(key) || !post[key].is_array() || post[key].size() != 2 || !post[key][0].is_string())
        fail(std::string("post_processor BertProcessing's ") + key + " must be [token, id]");
    t->cls_ = id_of(post["cls"][0]), t->sep_ = id_of(post["sep"][0]);
  } else if (type_of(post) == "TemplateProcessing") {
    const nlohmann::json single = json_limits::field(post, "single", nlohmann::json::array());
    auto special = [&](const nlohmann::json& piece) -> std::string {
      if (!piece.is_object() || !piece.contains("SpecialToken") || !piece["SpecialToken"].is_object() ||
          !piece["SpecialToken"].contains("id") || !piece["SpecialToken"]["id"].is_string())
        return std::string();
      return piece["SpecialToken"]["id"];
    };
    if (!single.is_array() || single.size() != 3 || special(single[0]).empty() || !single[1].contains("Sequence") ||
        special(single[2]).empty())
      fail("post_processor TemplateProcessing: vkformer reads the single template '[CLS] $A [SEP]' (a special token, "
           "the text, a special token); this one is '" + json_limits::shown(single) + "'");
    t->cls_ = id_of(special(single[0])), t->sep_ = id_of(special(single[2]));
  } else {
    fail("post_processor '" + (post.is_null() ? std::string("none") : type_of(post)) +
         "' is not supported (vkformer reads BertProcessing and TemplateProcessing)");
  }
  const std::string pad = j.contains("padding") && j["padding"].is_object()
                              ? json_limits::field(j["padding"], "pad_token", std::string("[PAD]")) : std::string("[PAD]");
  t->pad_ = t->ids_.count(pad) ? t->ids_.at(pad) : 0;
  if (files.has("tokenizer_config.json")) {
    const nlohmann::json c = read_json_object(files, "tokenizer_config.json", "tokenizer");
    if (c.contains("clean_up_tokenization_spaces") && c["clean_up_tokenization_spaces"].is_boolean())
      t->cleanup_ = t->cleanup_ && c["clean_up_tokenization_spaces"].get<bool>();
    if (c.contains("pad_token") && !c["pad_token"].is_null() && t->ids_.count(token_name(c, "pad_token", "[PAD]")))
      t->pad_ = t->ids_.at(token_name(c, "pad_token", "[PAD]"));
  }
  t->finish(file);
  return t;
} catch (const json_limits::WrongType& e) {
  throw Error("tokenizer " + files.where("tokenizer.json") + ": " + e.what());
}

std::unique_ptr<WordPieceTokenizer> WordPieceTokenizer::from_vocab_txt(const ModelFiles& files, uint32_t vocab_size) try {
  const std::string file = files.where("vocab.txt");
  const std::string text = files.read("vocab.txt", "tokenizer", vocab_file_bytes(vocab_size));
  auto fail = [&](const std::string& what) -> void { throw Error("tokenizer " + file + ": " + what); };
  if (const size_t bad = invalid_utf8_at(text); bad != std::string::npos)
    fail("is not valid UTF-8 (byte " + std::to_string(bad) + ")");
  std::unique_ptr<WordPieceTokenizer> t(new WordPieceTokenizer());
  t->source_ = "vocab.txt";
  // transformers' load_vocab: one token a line (its newline taken off), its id the line's
  // number; a token listed again takes the later line's id.
  for (size_t at = 0; at < text.size();) {
    size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    if (t->tokens_.size() == vocab_size)
      fail("more tokens than the model's vocabulary of " + std::to_string(vocab_size) + " (config.json)");
    const std::string token = text.substr(at, end - at);
    t->ids_[token] = uint32_t(t->tokens_.size());
    t->tokens_.push_back(token);
    at = end + 1;
  }
  if (t->tokens_.empty()) fail("holds no tokens");

  nlohmann::json c = nlohmann::json::object();
  if (files.has("tokenizer_config.json")) c = read_json_object(files, "tokenizer_config.json", "tokenizer");
  BertTextRules& r = t->rules_;
  r.python_rules = true;
  r.lowercase = json_limits::field(c, "do_lower_case", true);
  r.chinese_chars = json_limits::field(c, "tokenize_chinese_chars", true);
  r.strip_accents = c.contains("strip_accents") && !c["strip_accents"].is_null() ? json_limits::field(c, "strip_accents", false)
                                                                                 : r.lowercase;
  if (!json_limits::field(c, "do_basic_tokenize", true))
    fail("tokenizer_config.json sets do_basic_tokenize false, which vkformer does not run");
  if (!json_limits::field(c, "do_split_on_punc", true))
    fail("tokenizer_config.json sets do_split_on_punc false, which vkformer does not run");
  if (c.contains("never_split") && c["never_split"].is_array())
    for (const auto& w : c["never_split"])
      if (w.is_string()) r.never_split.insert(w.get<std::string>());
  auto id_of = [&](const char* key, const char* fallback) {
    const std::string name = token_name(c, key, fallback);
    if (!t->ids_.count(name)) fail("the " + std::string(key) + " '" + name + "' is not a token of the vocabulary");
    return t->ids_.at(name);
  };
  t->unk_ = id_of("unk_token", "[UNK]"), t->cls_ = id_of("cls_token", "[CLS]"), t->sep_ = id_of("sep_token", "[SEP]");
  t->pad_ = id_of("pad_token", "[PAD]");
  for (const char* key : {"unk_token", "sep_token", "pad_token", "cls_token", "mask_token"}) {
    const std::string name = token_name(c, key, key == std::string("unk_token")   ? "[UNK]"
                                                : key == std::string("sep_token") ? "[SEP]"
                                                : key == std::string("pad_token") ? "[PAD]"
                                                : key == std::string("cls_token") ? "[CLS]" : "[MASK]");
    if (t->ids_.count(name)) t->specials_.push_back({name, t->ids_.at(name), false});
  }
  if (c.contains("clean_up_tokenization_spaces") && c["clean_up_tokenization_spaces"].is_boolean())
    t->cleanup_ = c["clean_up_tokenization_spaces"].get<bool>();
  t->finish(file);
  return t;
} catch (const json_limits::WrongType& e) {
  throw Error("tokenizer " + files.where("tokenizer_config.json") + ": " + e.what());
}

std::string WordPieceTokenizer::describe() const {
  return "WordPiece (" + source_ + ", " + std::to_string(tokens_.size()) + " tokens" +
         (rules_.lowercase ? ", lower-cased" : "") + ")";
}

void WordPieceTokenizer::normalized_words(std::string_view text, std::vector<std::u32string>& words) const {
  std::u32string s;
  s.reserve(text.size());
  for (size_t at = 0, n = 0; at < text.size(); at += n) {
    const char32_t c = utf8_code_point(text, at, &n);
    if (rules_.clean_text && (c == 0 || c == 0xFFFD || is_control(c))) continue;
    if (rules_.clean_text && python_isspace(c)) {
      s += U' ';
    } else if (rules_.chinese_chars && is_chinese(c)) {
      s += U' ', s += c, s += U' ';
    } else {
      s += c;
    }
  }
  if (!rules_.python_rules) {  // BertNormalizer: the whole text, accents then case
    if (rules_.strip_accents) s = accents_stripped(s);
    if (rules_.lowercase) s = lowered(s);
    split_words(s, words);
    return;
  }
  // BasicTokenizer: NFC, then each whitespace word lower-cased before its accents go.
  s = mapped(s, utf8proc_option_t(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
  std::vector<std::u32string> spaced;
  split_words(s, spaced, false);
  for (std::u32string& w : spaced) {
    if (!rules_.never_split.empty() && rules_.never_split.count(to_utf8(w))) {
      words.push_back(std::move(w));
      continue;
    }
    if (rules_.lowercase) w = lowered(w);
    if (rules_.strip_accents) w = accents_stripped(w);
    split_words(w, words);
  }
}

void WordPieceTokenizer::word_pieces(const std::u32string& word, std::vector<uint32_t>& ids) const {
  if (word.size() > max_word_chars_) {
    ids.push_back(unk_);
    return;
  }
  const size_t first = ids.size();
  for (size_t start = 0; start < word.size();) {
    size_t end = std::min(word.size(), start + longest_token_chars_);
    bool found = false;
    for (; end > start; --end) {
      std::string piece = start ? prefix_ : std::string();
      piece += to_utf8(word.data() + start, end - start);
      if (const auto it = ids_.find(piece); it != ids_.end()) {
        ids.push_back(it->second);
        found = true;
        break;
      }
    }
    if (!found) {  // no split of the whole word: one unknown token
      ids.resize(first);
      ids.push_back(unk_);
      return;
    }
    start = end;
  }
}

bool WordPieceTokenizer::encode_text(std::string_view utf8, size_t most, std::vector<uint32_t>& ids) const {
  bool cut = false;
  std::vector<uint32_t> found;
  split_at_special_tokens(
      utf8, specials_,
      [&](std::string_view part) {
        if (cut) return;
        std::vector<std::u32string> words;
        normalized_words(part, words);
        for (const std::u32string& w : words) {
          if (most && found.size() >= most) {
            cut = true;
            return;
          }
          word_pieces(w, found);
        }
      },
      found);
  if (most && found.size() > most) found.resize(most), cut = true;
  ids.insert(ids.end(), found.begin(), found.end());
  return cut;
}

std::vector<uint32_t> WordPieceTokenizer::encode_valid(std::string_view utf8) const {
  return encode_one(utf8).ids;
}

void WordPieceTokenizer::check_text(std::string_view utf8) const {
  if (const size_t bad = invalid_utf8_at(utf8); bad != std::string_view::npos)
    fail_invalid_input("tokenizer: the text is not valid UTF-8 (byte " + std::to_string(bad) + ")");
  if (const size_t nul = utf8.find('\0'); nul != std::string_view::npos)
    fail_invalid_input("tokenizer: the text holds a NUL byte (byte " + std::to_string(nul) + ")");
}

WordPieceIds WordPieceTokenizer::encode_one(std::string_view utf8, size_t max_tokens) const {
  check_text(utf8);
  if (max_tokens && max_tokens < 2) fail_invalid_input("tokenizer: at most " + std::to_string(max_tokens) + " tokens leaves no room for [CLS] and [SEP]");
  WordPieceIds o;
  o.ids.push_back(cls_);
  o.truncated = encode_text(utf8, max_tokens ? max_tokens - 2 : 0, o.ids);
  o.ids.push_back(sep_);
  o.types.assign(o.ids.size(), 0);
  return o;
}

WordPieceIds WordPieceTokenizer::encode_pair(std::string_view a, std::string_view b, size_t max_tokens) const {
  check_text(a);
  check_text(b);
  if (max_tokens && max_tokens < 5) fail_invalid_input("tokenizer: a pair needs at least 5 tokens (" + std::to_string(max_tokens) + " asked)");
  std::vector<uint32_t> ia, ib;
  // Each text's tokens, bounded by the whole budget (more of one cannot survive the cut).
  const size_t budget = max_tokens ? max_tokens - 3 : 0;
  bool cut = encode_text(a, budget ? budget + 1 : 0, ia);
  cut = encode_text(b, budget ? budget + 1 : 0, ib) || cut;
  bool truncated = false;
  if (budget && ia.size() + ib.size() > budget) {
    truncated = true;
    if (rules_.python_rules) {
      // transformers' longest_first: a token from the end of the longer text at a time,
      // the second's on a tie.
      while (ia.size() + ib.size() > budget) (ia.size() > ib.size() ? ia : ib).pop_back();
    } else {
      // tokenizers' LongestFirst: the shorter text (the first on a tie) keeps its tokens
      // where the longer can give up the rest; else the shorter gets half the budget and
      // the longer the other half, rounded up.
      const bool swap = ia.size() > ib.size();
      size_t n1 = std::min(ia.size(), ib.size()), n2 = std::max(n1, budget > n1 ? budget - n1 : 0);
      if (n1 + n2 > budget) n1 = budget / 2, n2 = n1 + budget % 2;
      if (swap) std::swap(n1, n2);
      ia.resize(std::min(ia.size(), n1)), ib.resize(std::min(ib.size(), n2));
    }
  }
  WordPieceIds o;
  o.truncated = truncated || (cut && budget);
  o.ids.push_back(cls_);
  o.ids.insert(o.ids.end(), ia.begin(), ia.end());
  o.ids.push_back(sep_);
  o.types.assign(o.ids.size(), 0);
  o.ids.insert(o.ids.end(), ib.begin(), ib.end());
  o.ids.push_back(sep_);
  o.types.resize(o.ids.size(), 1);
  return o;
}

std::vector<std::string> WordPieceTokenizer::words(std::string_view utf8) const {
  check_text(utf8);
  std::vector<std::u32string> words;
  normalized_words(utf8, words);
  std::vector<std::string> out;
  for (const auto& w : words) out.push_back(to_utf8(w));
  return out;
}

std::string WordPieceTokenizer::decode(const std::vector<uint32_t>& ids) const {
  // tokenizers' WordPiece decoder: tokens joined by spaces, a piece's prefix joining it
  // to the one before; then its clean-up of spaces before punctuation.
  std::string text;
  bool first = true;
  for (uint32_t id : ids) {
    if (id >= tokens_.size() || special_[id]) continue;
    const std::string& token = tokens_[id];
    if (!first && token.compare(0, prefix_.size(), prefix_) == 0) {
      text += token.substr(prefix_.size());
    } else {
      if (!first) text += ' ';
      text += token;
    }
    first = false;
  }
  if (!cleanup_) return text;
  text = clean_up_tokenization(std::move(text));
  for (size_t at = text.find(" do not"); at != std::string::npos; at = text.find(" do not", at + 6))
    text.replace(at, 7, " don't");
  return text;
}

}  // namespace vkf::model
