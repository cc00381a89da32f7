#include "bart_tokenizer.hpp"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <utf8proc.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <queue>
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

BartTokenizer::BartTokenizer(const ModelFiles& files, uint32_t vocab_size, Flavour flavour)
    : pattern_(std::make_unique<GptPattern>()), wrap_(flavour == Flavour::Bart) {
  const std::string vocab = files.where("vocab.json");
  const nlohmann::json j = read_json_object(files, "vocab.json", "tokenizer", vocab_file_bytes(vocab_size));
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
  const std::string merges = files.where("merges.txt");
  // A merge makes one token, so there are fewer merges than tokens: the file's size is
  // bounded as a vocabulary's is, before it is read.
  const std::string text = files.read("merges.txt", "tokenizer merges", vocab_file_bytes(vocab_size));
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
  const std::string config_file = files.where("tokenizer_config.json");
  if (files.has("tokenizer_config.json")) config = read_json_object(files, "tokenizer_config.json", "tokenizer");
  auto flag = [&](const char* key, bool fallback) {
    const auto it = config.find(key);
    if (it == config.end() || it->is_null()) return fallback;
    if (!it->is_boolean()) throw Error("tokenizer " + config_file + ": '" + key + "' must be true or false");
    return it->get<bool>();
  };
  add_prefix_space_ = flag("add_prefix_space", false);
  clean_up_spaces_ = flag("clean_up_tokenization_spaces", true);
  if (files.has("added_tokens.json")) {
    // Older save_pretrained writes the tokens added beyond vocab.json here; the specials
    // are already in it.
    const std::string added = files.where("added_tokens.json");
    const nlohmann::json tokens = read_json_object(files, "added_tokens.json", "tokenizer");
    for (const auto& [token, id] : tokens.items())
      if (!ids_.count(token) || !id.is_number_unsigned() || ids_.at(token) != id.get<uint64_t>())
        throw Error("tokenizer " + added + ": added token '" + token +
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

std::vector<std::string> BartTokenizer::bpe_by_rank(std::vector<std::string> symbols) const {
  // The `tokenizers` library's order: the pair of lowest rank first, the leftmost of equal
  // ones, one merge at a time (a heap of candidate pairs, stale ones skipped), so a long
  // text is O(n log n) rather than a scan of every pair per merge.
  const size_t n = symbols.size();
  std::vector<long> prev(n), next(n);
  for (size_t i = 0; i < n; ++i) prev[i] = long(i) - 1, next[i] = i + 1 < n ? long(i + 1) : -1;
  std::vector<bool> alive(n, true);
  using Candidate = std::pair<uint32_t, size_t>;  // rank, left symbol
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> queue;
  auto rank_of = [&](size_t left) -> uint32_t {
    if (next[left] < 0) return UINT32_MAX;
    const auto it = ranks_.find(symbols[left] + " " + symbols[size_t(next[left])]);
    return it == ranks_.end() ? UINT32_MAX : it->second;
  };
  auto offer = [&](size_t left) {
    if (const uint32_t r = rank_of(left); r != UINT32_MAX) queue.push({r, left});
  };
  for (size_t i = 0; i + 1 < n; ++i) offer(i);
  while (!queue.empty()) {
    const auto [rank, left] = queue.top();
    queue.pop();
    if (!alive[left] || rank_of(left) != rank) continue;  // merged away, or its pair changed since
    const size_t right = size_t(next[left]);
    symbols[left] += symbols[right];
    alive[right] = false;
    next[left] = next[right];
    if (next[right] >= 0) prev[size_t(next[right])] = long(left);
    offer(left);
    if (prev[left] >= 0) offer(size_t(prev[left]));
  }
  std::vector<std::string> out;
  for (size_t i = 0; i < n; ++i)
    if (alive[i]) out.push_back(std::move(symbols[i]));
  return out;
}

void BartTokenizer::encode_sentencepiece_style(std::string_view text, std::vector<uint32_t>& ids) const {
  // The normalizer: the mark before the text and for every space.
  static const std::string kMark = "\u2581";
  std::string marked = kMark;
  for (char c : text) c == ' ' ? marked += kMark : marked += c;
  // Symbols: each character in the vocabulary, else its bytes' <0xXX> tokens, else the
  // unknown token (consecutive ones fused into one where fuse_unk says).
  std::vector<std::string> symbols;
  bool last_unknown = false;
  for (size_t at = 0, n = 0; at < marked.size(); at += n) {
    utf8_code_point(marked, at, &n);
    std::string c = marked.substr(at, n);
    if (ids_.count(c)) {
      symbols.push_back(std::move(c));
      last_unknown = false;
      continue;
    }
    std::vector<std::string> bytes;
    for (unsigned char b : c) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "<0x%02X>", b);
      if (!ids_.count(hex)) break;
      bytes.push_back(hex);
    }
    if (bytes.size() == c.size()) {
      for (auto& b : bytes) symbols.push_back(std::move(b));
      last_unknown = false;
    } else if (!(fuse_unk_ && last_unknown)) {
      symbols.push_back(tokens_[unk_]);
      last_unknown = true;
    }
  }
  for (const auto& token : bpe_by_rank(std::move(symbols))) ids.push_back(id_of(token));
}

void BartTokenizer::encode_text(std::string_view text, std::vector<uint32_t>& ids) const {
  if (spm_) return encode_sentencepiece_style(text, ids);
  if (nfc_) {  // the normalizer, on each piece of text between added tokens, as `tokenizers` runs it
    std::string composed(text);  // NUL-terminated for utf8proc (encode() refused NUL bytes)
    utf8proc_uint8_t* nfc = utf8proc_NFC(reinterpret_cast<const utf8proc_uint8_t*>(composed.c_str()));
    if (!nfc) throw Error("tokenizer: NFC normalization failed (out of memory)", ErrorKind::OutOfMemory);
    composed = reinterpret_cast<const char*>(nfc);
    std::free(nfc);
    pattern_->for_each_word(composed, [&](std::string_view word) { encode_word(word, ids); });
    return;
  }
  pattern_->for_each_word(text, [&](std::string_view word) { encode_word(word, ids); });
}

void BartTokenizer::encode_word(std::string_view word, std::vector<uint32_t>& ids) const {
  std::string spelled;
  for (char b : word) spelled += kBytes.spelled[uint8_t(b)];
  if (ignore_merges_)
    if (const auto it = ids_.find(spelled); it != ids_.end()) return ids.push_back(it->second);
  for (const auto& token : bpe(spelled)) ids.push_back(id_of(token));
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
  ids.insert(ids.end(), prefix_.begin(), prefix_.end());
  split_at_special_tokens(text, specials_, [&](std::string_view part) { encode_text(part, ids); }, ids);
  ids.insert(ids.end(), suffix_.begin(), suffix_.end());
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
    bool added = false, special = false;
    for (const auto& s : specials_) added |= s.id == id;
    // tokenizer.json's added tokens: the special ones skipped, the others their own text
    // (not byte-level); BART's and GPT-2's specials are all skipped.
    special = source_.empty() ? added : std::find(special_ids_.begin(), special_ids_.end(), id) != special_ids_.end();
    if (special) continue;
    const std::string& token = tokens_[id];
    if (added) {
      bytes += token;
      continue;
    }
    if (spm_) {  // the decoder's Replace and ByteFallback; invalid bytes become U+FFFD below
      unsigned byte = 0;
      if (token.size() == 6 && token.rfind("<0x", 0) == 0 && token[5] == '>' && std::sscanf(token.c_str() + 3, "%2X", &byte) == 1) {
        bytes += char(byte);
        continue;
      }
      for (size_t at = 0;;) {
        const size_t m = token.find("\u2581", at);
        bytes.append(token, at, m == std::string::npos ? std::string::npos : m - at);
        if (m == std::string::npos) break;
        bytes += ' ';
        at = m + 3;
      }
      continue;
    }
    for (size_t at = 0, n = 0; at < token.size(); at += n) {
      const char32_t c = utf8_code_point(token, at, &n);
      if (c >= kBytes.byte_of.size() || kBytes.byte_of[c] < 0)
        throw Error("tokenizer: token " + std::to_string(id) + " ('" + token + "') is not byte-level BPE");
      bytes += char(kBytes.byte_of[c]);
    }
  }
  std::string text = decode_utf8_replacing(bytes);
  if (spm_ && !text.empty() && text[0] == ' ') text.erase(0, 1);  // the decoder's Strip(' ', 1, 0)
  return clean_up_spaces_ ? clean_up_tokenization(std::move(text)) : text;
}

std::string BartTokenizer::describe() const {
  if (!source_.empty())
    return "byte-level BPE (" + source_ + ": " + std::to_string(tokens_.size()) + " tokens, " + std::to_string(merges_) +
           " merges)";
  return "byte-level BPE (vocab.json of " + std::to_string(tokens_.size()) + " tokens, merges.txt of " +
         std::to_string(merges_) + " merges)";
}

std::unique_ptr<BartTokenizer> BartTokenizer::from_tokenizer_json(const ModelFiles& files, uint32_t vocab_size) {
  const std::string file = files.where("tokenizer.json");
  // The file holds the vocabulary and the merges (each at most a few dozen bytes a token).
  const nlohmann::json j = read_json_object(files, "tokenizer.json", "tokenizer", 2 * vocab_file_bytes(vocab_size));
  auto fail = [&](const std::string& what) -> void { throw Error("tokenizer " + file + ": " + what); };
  auto type_of = [](const nlohmann::json& v) { return v.is_object() ? v.value("type", std::string()) : std::string(); };
  std::unique_ptr<BartTokenizer> t(new BartTokenizer());
  t->wrap_ = false;
  t->clean_up_spaces_ = true;  // transformers' default; tokenizer_config.json may say otherwise
  t->source_ = "tokenizer.json";

  // The model: byte-level BPE, nothing that would change its ids.
  const nlohmann::json& model = j.contains("model") ? j["model"] : nlohmann::json();
  if (type_of(model) != "BPE")
    fail("model type '" + type_of(model) + "' is not supported (vkformer reads byte-level BPE tokenizer.json files)");
  // byte_fallback: SentencePiece-style BPE (Llama 2's and TinyLlama's tokenizer.json, converted
  // from their tokenizer.model): Unicode characters, not bytes, are the symbols, and a
  // character outside the vocabulary becomes its UTF-8 bytes' <0xXX> tokens.
  t->spm_ = model.value("byte_fallback", false);
  t->fuse_unk_ = model.value("fuse_unk", false);
  if (model.contains("dropout") && !model["dropout"].is_null()) fail("model.dropout is set (BPE dropout), which vkformer does not run");
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"})
    if (model.contains(key) && !model[key].is_null() && model[key] != "")
      fail(std::string("model.") + key + " is set, which byte-level BPE does not use");
  t->ignore_merges_ = model.value("ignore_merges", false);
  if (!model.contains("vocab") || !model["vocab"].is_object()) fail("model.vocab must be an object of token ids");
  const nlohmann::json& vocab = model["vocab"];
  if (vocab.size() > vocab_size)
    fail(std::to_string(vocab.size()) + " tokens, more than the model's vocabulary of " + std::to_string(vocab_size) +
         " (config.json)");
  t->tokens_.resize(vocab.size());
  for (const auto& [token, id] : vocab.items()) {
    if (!id.is_number_unsigned() || id.get<uint64_t>() >= vocab.size())
      fail("the id of '" + token + "' must be an integer from 0 to " + std::to_string(vocab.size() - 1));
    const uint32_t i = id.get<uint32_t>();
    if (!t->tokens_[i].empty()) fail("id " + std::to_string(i) + " is given twice");
    t->tokens_[i] = token;
    t->ids_[token] = i;
  }
  if (!model.contains("merges") || !model["merges"].is_array()) fail("model.merges must be a list");
  uint32_t rank = 0;
  for (const auto& m : model["merges"]) {
    std::string first, second;
    if (m.is_string()) {  // "a b"
      const std::string text = m.get<std::string>();
      const size_t space = text.find(' ');
      if (space == std::string::npos || text.find(' ', space + 1) != std::string::npos)
        fail("merge '" + text + "' must be two symbols separated by one space");
      first = text.substr(0, space), second = text.substr(space + 1);
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {  // ["a", "b"] (newer files)
      first = m[0].get<std::string>(), second = m[1].get<std::string>();
    } else {
      fail("a merge must be \"a b\" or [\"a\", \"b\"]");
    }
    t->ranks_.emplace(first + " " + second, rank++);  // the first listing of a pair ranks it
    ++t->merges_;
  }

  if (t->spm_) {
    // SentencePiece's layout as transformers' LlamaConverter writes it: the word-boundary
    // mark before each piece of text and for each space, no pre-tokenizer (a piece of text
    // is one word), and a decoder that undoes it. Another layout would change the ids.
    const nlohmann::json none;
    const nlohmann::json& norm = j.contains("normalizer") ? j["normalizer"] : none;
    const nlohmann::json expected_norm = nlohmann::json::parse(
        R"({"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": "▁"},
            {"type": "Replace", "pattern": {"String": " "}, "content": "▁"}]})");
    if (norm != expected_norm)
      fail("with byte_fallback, the normalizer must be Prepend(\u2581) then Replace(' ', \u2581) as transformers' "
           "LlamaConverter writes it; this one is '" + norm.dump() + "'");
    if (j.contains("pre_tokenizer") && !j["pre_tokenizer"].is_null())
      fail("with byte_fallback, pre_tokenizer '" + type_of(j["pre_tokenizer"]) + "' is not supported (vkformer reads "
           "the Prepend/Replace layout with none)");
    const nlohmann::json expected_decoder = nlohmann::json::parse(
        R"({"type": "Sequence", "decoders": [{"type": "Replace", "pattern": {"String": "▁"}, "content": " "},
            {"type": "ByteFallback"}, {"type": "Fuse"}, {"type": "Strip", "content": " ", "start": 1, "stop": 0}]})");
    if (j.value("decoder", nlohmann::json()) != expected_decoder)
      fail("with byte_fallback, the decoder must be Replace(\u2581, ' '), ByteFallback, Fuse, Strip(' ', 1, 0)");
    if (!model.contains("unk_token") || !model["unk_token"].is_string() || !t->ids_.count(model["unk_token"].get<std::string>()))
      fail("with byte_fallback, model.unk_token must be a token of the vocabulary");
    t->unk_ = t->ids_.at(model["unk_token"].get<std::string>());
  } else {
  // The text's path to the model: no normalizer or NFC (Qwen2's); ByteLevel, or Split
  // then ByteLevel.
  if (j.contains("normalizer") && !j["normalizer"].is_null()) {
    if (type_of(j["normalizer"]) != "NFC")
      fail("normalizer '" + type_of(j["normalizer"]) + "' is not supported (vkformer reads byte-level BPE without one, or with NFC)");
    t->nfc_ = true;
  }
  const nlohmann::json& pre = j.contains("pre_tokenizer") ? j["pre_tokenizer"] : nlohmann::json();
  auto byte_level = [&](const nlohmann::json& p, bool regex) {
    if (type_of(p) != "ByteLevel") return false;
    if (p.value("use_regex", true) != regex) fail("pre_tokenizer ByteLevel's use_regex is not what its place needs");
    t->add_prefix_space_ = p.value("add_prefix_space", false);
    return true;
  };
  if (byte_level(pre, true)) {
    t->pattern_ = std::make_unique<GptPattern>();
  } else if (type_of(pre) == "Sequence" && pre.contains("pretokenizers") && pre["pretokenizers"].is_array() &&
             pre["pretokenizers"].size() == 2 && type_of(pre["pretokenizers"][0]) == "Split" &&
             byte_level(pre["pretokenizers"][1], false)) {
    const nlohmann::json& split = pre["pretokenizers"][0];
    if (split.value("behavior", std::string()) != "Isolated" || split.value("invert", false))
      fail("pre_tokenizer Split must be behavior Isolated, not inverted");
    if (!split.contains("pattern") || !split["pattern"].is_object() || !split["pattern"].contains("Regex") ||
        !split["pattern"]["Regex"].is_string())
      fail("pre_tokenizer Split's pattern must be a Regex");
    t->pattern_ = std::make_unique<GptPattern>(split["pattern"]["Regex"].get<std::string>());
  } else {
    fail("pre_tokenizer '" + type_of(pre) + "' is not supported (vkformer reads ByteLevel, or Split then ByteLevel)");
  }
  if (type_of(j.value("decoder", nlohmann::json())) != "ByteLevel") fail("decoder must be ByteLevel");
  }

  // Added tokens: matched in the text first, tokens of their own; the special ones are
  // left out of decoded text.
  if (j.contains("added_tokens") && j["added_tokens"].is_array())
    for (const auto& a : j["added_tokens"]) {
      if (!a.is_object() || !a.contains("id") || !a["id"].is_number_unsigned() || !a.contains("content") ||
          !a["content"].is_string() || a["content"] == "")
        fail("an added token needs an integer id and a non-empty content");
      if (a.value("single_word", false) || a.value("rstrip", false))
        fail("added token '" + a["content"].get<std::string>() + "' has single_word or rstrip set, which vkformer does not run");
      const std::string content = a["content"];
      const uint32_t id = a["id"].get<uint32_t>();
      if (id >= vocab_size) fail("added token '" + content + "' has id " + std::to_string(id) + ", outside the model's vocabulary");
      if (id >= t->tokens_.size()) t->tokens_.resize(id + 1);
      t->tokens_[id] = content;
      t->ids_[content] = id;
      t->specials_.push_back({content, id, a.value("lstrip", false)});
      if (a.value("special", false)) t->special_ids_.push_back(id);
    }

  // What the post-processor puts around one text (TemplateProcessing's "single").
  const nlohmann::json& post = j.contains("post_processor") ? j["post_processor"] : nlohmann::json();
  if (type_of(post) == "TemplateProcessing") {
    bool seen_text = false;
    for (const auto& piece : post.value("single", nlohmann::json::array())) {
      if (piece.contains("Sequence")) {
        seen_text = true;
        continue;
      }
      if (!piece.contains("SpecialToken") || !piece["SpecialToken"].contains("id") || !piece["SpecialToken"]["id"].is_string())
        fail("post_processor TemplateProcessing: a piece must be a Sequence or a SpecialToken");
      const std::string name = piece["SpecialToken"]["id"];
      const auto it = t->ids_.find(name);
      if (it == t->ids_.end()) fail("post_processor TemplateProcessing names '" + name + "', which is not a token");
      (seen_text ? t->suffix_ : t->prefix_).push_back(it->second);
    }
  } else if (!post.is_null() && type_of(post) != "ByteLevel") {
    fail("post_processor '" + type_of(post) + "' is not supported (vkformer reads TemplateProcessing and ByteLevel)");
  }
  // tokenizer_config.json (optional): whether decoding cleans up spaces.
  if (files.has("tokenizer_config.json")) {
    const nlohmann::json c = read_json_object(files, "tokenizer_config.json", "tokenizer");
    if (c.contains("clean_up_tokenization_spaces") && c["clean_up_tokenization_spaces"].is_boolean())
      t->clean_up_spaces_ = c["clean_up_tokenization_spaces"].get<bool>();
  }
  for (size_t i = 0; i < t->tokens_.size(); ++i)
    if (t->tokens_[i].empty()) fail("id " + std::to_string(i) + " has no token (the ids must number the tokens)");
  return t;
}

}  // namespace vkf::model
