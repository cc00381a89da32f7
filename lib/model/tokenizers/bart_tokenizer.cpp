#include "bart_tokenizer.hpp"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <array>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "hf_text.hpp"
#include "json_file.hpp"
#include "vkformer/error.hpp"
#include "vkformer/files.hpp"

namespace vkf::model {

namespace {

// GPT-2's bytes_to_unicode(): the printable Latin-1 bytes stand for themselves, the other
// 68 (controls, space, soft hyphen...) for U+0100 onwards, so that no BPE symbol is a space.
struct ByteLevel {
  std::array<std::string, 256> spelled;  // byte -> its character, UTF-8
  std::array<int16_t, 0x144> byte_of{};  // character -> byte, -1 when none
  ByteLevel() {
    byte_of.fill(-1);
    char32_t next = 0x100;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      const char32_t c = printable ? char32_t(b) : next++;
      append_utf8(spelled[b], c);
      byte_of[c] = int16_t(b);
    }
  }
};
const ByteLevel kBytes;

// The text of a special token in tokenizer_config.json: a string, or an AddedToken's dict.
std::string token_text(const nlohmann::json& config, const char* key, const char* fallback, const std::string& file) {
  const auto it = config.find(key);
  if (it == config.end() || it->is_null()) return fallback;
  if (it->is_string()) return it->get<std::string>();
  if (it->is_object() && it->contains("content") && (*it)["content"].is_string()) return (*it)["content"];
  throw Error("tokenizer " + file + ": '" + key + "' must be a string or an object with a string 'content'");
}

}  // namespace

// GPT-2's pattern (the `regex` module's, which BartTokenizer uses). Its \s is Unicode's
// White_Space, spelled out here because PCRE2's \s leaves out U+0085.
class GptPattern {
 public:
  GptPattern() {
    const std::string space = "\\t\\n\\x0B\\f\\r \\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}";
    const std::string pattern = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^" + space + "\\p{L}\\p{N}]+|[" + space +
                                "]+(?![^" + space + "])|[" + space + "]+";
    int error = 0;
    PCRE2_SIZE offset = 0;
    code_ = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(), PCRE2_UTF, &error, &offset, nullptr);
    if (!code_) {
      PCRE2_UCHAR message[256];
      pcre2_get_error_message(error, message, sizeof message);
      throw Error(std::string("tokenizer: PCRE2 cannot compile GPT-2's pattern: ") + reinterpret_cast<char*>(message));
    }
    pcre2_jit_compile(code_, PCRE2_JIT_COMPLETE);  // where JIT is missing, the interpreter matches the same
  }
  ~GptPattern() { pcre2_code_free(code_); }
  GptPattern(const GptPattern&) = delete;
  GptPattern& operator=(const GptPattern&) = delete;

  // re.findall: each match in turn, the search going on where the last one ended.
  // `text` must be valid UTF-8 (checked before).
  template <class F>
  void for_each_word(std::string_view text, F&& f) const {
    pcre2_match_data* match = pcre2_match_data_create_from_pattern(code_, nullptr);
    if (!match) throw Error("tokenizer: out of memory");
    PCRE2_SIZE at = 0;
    while (at < text.size()) {
      const int rc = pcre2_match(code_, reinterpret_cast<PCRE2_SPTR>(text.data()), text.size(), at, PCRE2_NO_UTF_CHECK,
                                 match, nullptr);
      if (rc == PCRE2_ERROR_NOMATCH) break;
      if (rc < 0) {
        pcre2_match_data_free(match);
        throw Error("tokenizer: PCRE2 failed to match (error " + std::to_string(rc) + ")");
      }
      const PCRE2_SIZE* span = pcre2_get_ovector_pointer(match);
      if (span[1] == span[0]) break;  // every alternative takes at least one character
      f(text.substr(span[0], span[1] - span[0]));
      at = span[1];
    }
    pcre2_match_data_free(match);
  }

 private:
  pcre2_code* code_ = nullptr;
};

BartTokenizer::BartTokenizer(const std::string& directory, uint32_t vocab_size, Flavour flavour)
    : pattern_(std::make_unique<GptPattern>()), wrap_(flavour == Flavour::Bart) {
  namespace fs = std::filesystem;
  const fs::path dir(directory);

  const std::string vocab = (dir / "vocab.json").string();
  const nlohmann::json j = read_json_object(vocab, "tokenizer", vocab_file_bytes(vocab_size));
  if (j.size() > vocab_size)
    throw Error("tokenizer " + vocab + ": " + std::to_string(j.size()) + " tokens, more than the model's vocabulary of " +
                std::to_string(vocab_size) + " (config.json)");
  tokens_.resize(j.size());
  for (const auto& [token, id] : j.items()) {
    if (!id.is_number_unsigned() || id.get<uint64_t>() >= j.size())
      throw Error("tokenizer " + vocab + ": the id of '" + token + "' must be an integer from 0 to " +
                  std::to_string(j.size() - 1) + " (the ids number the tokens)");
    const uint32_t i = id.get<uint32_t>();
    if (!tokens_[i].empty()) throw Error("tokenizer " + vocab + ": id " + std::to_string(i) + " is given twice");
    tokens_[i] = token;
    ids_[token] = i;
  }

  // merges.txt as BartTokenizer reads it: split("\n")[1:-1], the first line being the
  // "#version" header and the last the empty one after the final newline; a merge listed
  // twice keeps its later rank.
  const std::string merges = (dir / "merges.txt").string();
  require_regular_file(merges, "tokenizer merges");
  // A merge makes one token, so there are fewer merges than tokens: the file's size is
  // bounded as a vocabulary's is, before it is read.
  if (const uint64_t bytes = std::filesystem::file_size(merges); bytes > vocab_file_bytes(vocab_size))
    throw Error("tokenizer " + merges + ": is " + std::to_string(bytes) + " bytes, more than " +
                std::to_string(vocab_file_bytes(vocab_size)) + " for a vocabulary of " + std::to_string(vocab_size));
  std::ifstream in(merges, std::ios::binary);
  std::stringstream whole;
  whole << in.rdbuf();
  if (!in) throw Error("tokenizer " + merges + ": cannot be read");
  const std::string text = whole.str();
  if (size_t bad = invalid_utf8_at(text); bad != std::string::npos)
    throw Error("tokenizer " + merges + ": not UTF-8 (byte " + std::to_string(bad) + ")");
  std::vector<std::string> lines;
  for (size_t start = 0;;) {
    const size_t end = text.find('\n', start);
    lines.push_back(text.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos) break;
    start = end + 1;
  }
  for (size_t n = 1; n + 1 < lines.size(); ++n) {
    std::istringstream words(lines[n]);
    std::vector<std::string> pair;
    for (std::string w; words >> w;) pair.push_back(w);
    if (pair.empty()) continue;  // a blank line merges nothing
    if (pair.size() != 2)
      throw Error("tokenizer " + merges + ": line " + std::to_string(n + 1) + " must be two symbols, a merge ('" +
                  lines[n] + "')");
    ranks_[pair[0] + " " + pair[1]] = uint32_t(n - 1);
    ++merges_;
  }

  // tokenizer_config.json (optional): the special tokens' texts and two switches.
  nlohmann::json config = nlohmann::json::object();
  const fs::path config_path = dir / "tokenizer_config.json";
  const std::string config_file = config_path.string();
  if (fs::exists(config_path)) config = read_json_object(config_file, "tokenizer");
  auto flag = [&](const char* key, bool fallback) {
    const auto it = config.find(key);
    if (it == config.end() || it->is_null()) return fallback;
    if (!it->is_boolean()) throw Error("tokenizer " + config_file + ": '" + key + "' must be true or false");
    return it->get<bool>();
  };
  add_prefix_space_ = flag("add_prefix_space", false);
  clean_up_spaces_ = flag("clean_up_tokenization_spaces", true);
  if (const fs::path added = dir / "added_tokens.json"; fs::exists(added)) {
    // Older save_pretrained writes the tokens added beyond vocab.json here; the specials
    // are already in it.
    const nlohmann::json tokens = read_json_object(added.string(), "tokenizer");
    for (const auto& [token, id] : tokens.items())
      if (!ids_.count(token) || !id.is_number_unsigned() || ids_.at(token) != id.get<uint64_t>())
        throw Error("tokenizer " + added.string() + ": added token '" + token +
                    "' is not in vocab.json with that id (vkformer runs BART's own vocabulary only)");
  }
  if (const auto it = config.find("added_tokens_decoder"); it != config.end() && it->is_object())
    for (const auto& [id, token] : it->items())
      if (!token.is_object() || !token.value("special", false))
        throw Error("tokenizer " + config_file + ": added token " + id +
                    " is not a special token (vkformer runs BART's own vocabulary and special tokens only)");

  if (flavour == Flavour::Gpt2) {
    // GPT2Tokenizer: <|endoftext|> (or the config's texts) as BOS, EOS and unknown; a
    // pad token only when the config names one.
    const std::string bos = token_text(config, "bos_token", "<|endoftext|>", config_file),
                      eos = token_text(config, "eos_token", "<|endoftext|>", config_file),
                      unk = token_text(config, "unk_token", "<|endoftext|>", config_file);
    std::vector<std::string> named = {bos, eos, unk};
    if (const auto it = config.find("pad_token"); it != config.end() && !it->is_null())
      named.push_back(token_text(config, "pad_token", "", config_file));
    for (const std::string& t : named) {
      if (t.empty()) throw Error("tokenizer " + config_file + ": a special token is empty");
      if (!ids_.count(t)) {
        ids_[t] = uint32_t(tokens_.size());
        tokens_.push_back(t);
      }
      bool known = false;
      for (const auto& sp : specials_) known |= sp.text == t;
      if (!known) specials_.push_back({t, ids_.at(t), false});
    }
    bos_ = ids_.at(bos);
    eos_ = ids_.at(eos);
    unk_ = ids_.at(unk);
    if (tokens_.size() > vocab_size)
      throw Error("tokenizer " + vocab + ": with its special tokens, " + std::to_string(tokens_.size()) +
                  " tokens, more than the model's vocabulary of " + std::to_string(vocab_size) + " (config.json)");
    return;
  }
  // The special tokens, in transformers' order: one missing from vocab.json is added after
  // it, as the slow tokenizer does. <mask> takes the space before it (lstrip), the rest none.
  const std::string bos = token_text(config, "bos_token", "<s>", config_file),
                    eos = token_text(config, "eos_token", "</s>", config_file),
                    unk = token_text(config, "unk_token", "<unk>", config_file),
                    sep = token_text(config, "sep_token", "</s>", config_file),
                    pad = token_text(config, "pad_token", "<pad>", config_file),
                    cls = token_text(config, "cls_token", "<s>", config_file),
                    mask = token_text(config, "mask_token", "<mask>", config_file);
  for (const std::string* t : {&bos, &eos, &unk, &sep, &pad, &cls, &mask}) {
    if (t->empty()) throw Error("tokenizer " + config_file + ": a special token is empty");
    if (!ids_.count(*t)) {
      ids_[*t] = uint32_t(tokens_.size());
      tokens_.push_back(*t);
    }
    bool known = false;
    for (const auto& s : specials_) known |= s.text == *t;
    if (!known) specials_.push_back({*t, ids_.at(*t), t == &mask});
  }
  bos_ = ids_.at(cls);  // build_inputs_with_special_tokens: cls + ids + sep
  eos_ = ids_.at(sep);
  unk_ = ids_.at(unk);
}

BartTokenizer::~BartTokenizer() = default;

uint32_t BartTokenizer::id_of(const std::string& token) const {
  const auto it = ids_.find(token);
  return it == ids_.end() ? unk_ : it->second;
}

std::vector<std::string> BartTokenizer::bpe(std::string_view word) const {
  std::vector<std::string> symbols;
  for (size_t at = 0, n = 0; at < word.size(); at += n) {
    utf8_code_point(word, at, &n);
    symbols.emplace_back(word.substr(at, n));
  }
  // Merge the adjacent pair of lowest rank everywhere it occurs, left to right, until no
  // pair has a rank (a pair's rank is unique, so "lowest" is never a tie between pairs).
  while (symbols.size() > 1) {
    uint32_t best = UINT32_MAX;
    std::string first, second;
    for (size_t i = 0; i + 1 < symbols.size(); ++i) {
      const auto it = ranks_.find(symbols[i] + " " + symbols[i + 1]);
      if (it != ranks_.end() && it->second < best) best = it->second, first = symbols[i], second = symbols[i + 1];
    }
    if (best == UINT32_MAX) break;
    std::vector<std::string> merged;
    for (size_t i = 0; i < symbols.size();) {
      if (i + 1 < symbols.size() && symbols[i] == first && symbols[i + 1] == second) {
        merged.push_back(first + second);
        i += 2;
      } else {
        merged.push_back(std::move(symbols[i++]));
      }
    }
    symbols = std::move(merged);
  }
  return symbols;
}

void BartTokenizer::encode_text(std::string_view text, std::vector<uint32_t>& ids) const {
  pattern_->for_each_word(text, [&](std::string_view word) {
    std::string spelled;
    for (char b : word) spelled += kBytes.spelled[uint8_t(b)];
    for (const auto& token : bpe(spelled)) ids.push_back(id_of(token));
  });
}

std::vector<uint32_t> BartTokenizer::encode_valid(std::string_view utf8) const {
  std::string text(utf8);
  if (add_prefix_space_ && !text.empty()) {
    size_t n = 0;
    if (!python_isspace(utf8_code_point(text, 0, &n))) text.insert(0, " ");
  }
  // Special tokens in the text are tokens of their own (<mask> takes the spaces before it).
  std::vector<uint32_t> ids;
  if (wrap_) ids.push_back(bos_);
  split_at_special_tokens(text, specials_, [&](std::string_view part) { encode_text(part, ids); }, ids);
  if (wrap_) ids.push_back(eos_);
  return ids;
}

std::string BartTokenizer::decode(const std::vector<uint32_t>& ids) const {
  std::string bytes;
  // As transformers' decode(skip_special_tokens=True): every special token is skipped,
  // EOS included, wherever it is (generated ids have only specials after the first EOS).
  for (uint32_t id : ids) {
    if (id >= tokens_.size()) throw Error("tokenizer: id " + std::to_string(id) + " is not in vocab.json (" +
                                          std::to_string(tokens_.size()) + " tokens)");
    bool special = false;
    for (const auto& s : specials_) special |= s.id == id;
    if (special) continue;
    const std::string& token = tokens_[id];
    for (size_t at = 0, n = 0; at < token.size(); at += n) {
      const char32_t c = utf8_code_point(token, at, &n);
      if (c >= kBytes.byte_of.size() || kBytes.byte_of[c] < 0)
        throw Error("tokenizer: token " + std::to_string(id) + " ('" + token + "') is not byte-level BPE");
      bytes += char(kBytes.byte_of[c]);
    }
  }
  std::string text = decode_utf8_replacing(bytes);
  return clean_up_spaces_ ? clean_up_tokenization(std::move(text)) : text;
}

std::string BartTokenizer::describe() const {
  return "byte-level BPE (vocab.json of " + std::to_string(tokens_.size()) + " tokens, merges.txt of " +
         std::to_string(merges_) + " merges)";
}

}  // namespace vkf::model
