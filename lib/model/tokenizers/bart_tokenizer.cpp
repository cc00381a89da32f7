#include "bart_tokenizer.hpp"

#include <utf8proc.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <queue>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "gpt_pattern.hpp"
#include "hf_text.hpp"
#include "json_file.hpp"
#include "vkformer/error.hpp"
#include "files.hpp"

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
  check_tables(merges, vocab);

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
      if (!token.is_object() || !token.contains("special") || token["special"] != true)
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

void BartTokenizer::check_tables(const std::string& merges_file, const std::string& vocab_file) const {
  auto cut = [](const std::string& s) { return s.size() > 40 ? s.substr(0, 40) + "..." : s; };
  for (const auto& [pair, rank] : ranks_) {
    const size_t space = pair.find(' ');
    const std::string a = pair.substr(0, space), b = pair.substr(space + 1);
    for (const std::string& symbol : {a, b, a + b})
      if (!ids_.count(symbol))
        throw Error("tokenizer " + merges_file + ": merge " + std::to_string(rank + 1) + " ('" + cut(a) + " " + cut(b) + "') " +
                    (symbol == a + b ? "makes '" + cut(symbol) + "', which" : "uses '" + cut(symbol) + "', which") +
                    " is not in the vocabulary: its ids would be wrong");
  }
  if (!spm_)
    for (int b = 0; b < 256; ++b)
      if (!ids_.count(kBytes.spelled[b]))
        throw Error("tokenizer " + vocab_file + ": byte 0x" + "0123456789ABCDEF"[b >> 4] + "0123456789ABCDEF"[b & 15] +
                    "'s symbol '" + kBytes.spelled[b] + "' is not in the vocabulary (a byte-level BPE needs all 256): "
                    "text holding that byte would become the unknown token");
}

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
  // A long word (a run without spaces, a hostile chain of merges): the heap's order, which
  // gives the same merges in O(n log n); the scan below is O(n^2) on it.
  if (symbols.size() > kLongWord) return bpe_by_rank(std::move(symbols));
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
    text = composed;
    return encode_words(text, ids);
  }
  encode_words(text, ids);
}

void BartTokenizer::encode_words(std::string_view text, std::vector<uint32_t>& ids) const {
  auto words = [&](std::string_view piece) {
    pattern_->for_each_word(piece, [&](std::string_view word) { encode_word(word, ids); });
  };
  if (digits_) digits_->for_each_word(text, words);
  else words(text);
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

}  // namespace vkf::model
