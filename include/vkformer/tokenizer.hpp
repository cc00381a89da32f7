#pragma once
// Tokenizers: text to source ids and generated ids to text, as a model directory
// defines them. Tokenizer::for_model picks the one the directory carries.
#include <cstdint>
#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "vkformer/model_files.hpp"

namespace vkf {

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;
  // Source text to the ids the encoder takes (with what the model expects appended:
  // Marian's EOS). Unknown text becomes the unknown token. Every tokenizer refuses, with
  // the same vkf::Error, text that is not valid UTF-8 or that holds a NUL byte (a C
  // string would end there, and no model's text contains one).
  std::vector<uint32_t> encode(std::string_view utf8) const;
  // Generated ids to text: vkformer's own tokenizer stops at EOS and skips the other
  // special tokens; Hugging Face ones skip every special token, as
  // decode(skip_special_tokens=True) does (the same for generated ids, where only special
  // tokens follow the first EOS).
  virtual std::string decode(const std::vector<uint32_t>& ids) const = 0;
  virtual uint32_t size() const = 0;
  // What it is, for `vkformer info`: "characters (vocab.json)", "sentencepiece (...)".
  virtual std::string describe() const = 0;

  // The most text a model of `positions` positions can read: each position is one token,
  // and no token stands for more bytes than the vocabulary's longest (found once, from
  // the tokens' own text, and a few bytes of slack for a normaliser's marks). Text past it
  // would only be tokenized to be cut, so callers refuse it, or cut it first where asked
  // (vkformer translate --truncate), before the tokenizer spends time and memory on it.
  size_t text_bytes_for(uint32_t positions) const;

  // The tokenizer of a model directory: vocab.json of characters (vkformer's models), or
  // Marian's source.spm + target.spm + vocab.json. Errors name the file and what is wrong.
  // The vocabulary may not be larger than the model's (config.json), which is checked
  // before its tables are built.
  static std::unique_ptr<Tokenizer> for_model(const ModelFiles& files);
  // The files a directory's tokenizer is read from, by its family ("vocab.json",
  // "tokenizer.json", ...): where none of them is there, the model takes ids only.
  static std::vector<std::string> files_for_model(const ModelFiles& files);

 protected:
  // encode() for text already checked to be valid UTF-8 without NUL bytes.
  virtual std::vector<uint32_t> encode_valid(std::string_view utf8) const = 0;

 private:
  // text_bytes_for's longest token, found on first use (0: not yet; two threads that both
  // find it store the same value). Copied with the tokenizer.
  struct Found {
    std::atomic<size_t> bytes{0};
    Found() = default;
    Found(const Found& o) : bytes(o.bytes.load()) {}
    Found& operator=(const Found& o) {
      bytes = o.bytes.load();
      return *this;
    }
  };
  mutable Found longest_token_bytes_;
};

// The text of a growing sequence of generated ids, a piece at a time as each token
// arrives (streaming): only whole UTF-8 characters (a byte-level token may end inside
// one), and nothing from the last space on, which the tokenizer's clean-up of spaces
// before punctuation (" ." -> ".") may still change. Concatenated, the pieces of push()
// and finish() are decode() of every id.
//
// push() decodes a short window, not every id so far (which made a long output O(n^2)):
// once every id but the newest is given, the window restarts at the newest, with the one
// before it decoded beside it as context (a SentencePiece token's leading space, a
// clean-up that looks one token back) and its text taken off again. Where the window's
// text does not begin with its context's (a character split across the two), the window
// goes back to the first id, as a whole decode would, and restarts when it can.
class TextStream {
 public:
  explicit TextStream(const Tokenizer& tokenizer) : tokenizer_(tokenizer) {}
  std::string push(uint32_t id);  // what is now certain, not given before
  std::string finish();           // the rest
  const std::vector<uint32_t>& ids() const { return ids_; }

 private:
  // The text of ids_[start_, ...) as decoded after ids_[context_, start_); nullopt when
  // that decode does not begin with the context's own text.
  std::optional<std::string> window_text() const;

  const Tokenizer& tokenizer_;
  std::vector<uint32_t> ids_;
  std::string given_;         // the text given so far
  size_t context_ = 0, start_ = 0;
  std::string context_text_;  // decode(ids_[context_, start_))
  size_t window_given_ = 0;   // how much of the window's text is given (the end of given_)
  std::string last_text_;     // the window's text before the newest id
};

// vocab.json lists one token per UTF-8 character, after the special tokens.
class CharTokenizer : public Tokenizer {
 public:
  // Throws vkf::Error for a malformed file, more than `max_tokens` tokens, a token listed
  // twice, or a special id that is missing (and no "<pad>", "<bos>", "<eos>", "<unk>"
  // token to default to), outside the list, or a one-character token (a real character
  // would become unknown or vanish when decoding).
  static CharTokenizer from_file(const std::string& vocab_json, uint32_t max_tokens = 1u << 24);
  // The same from a model's file (a directory's or one in memory).
  static CharTokenizer from_file(const ModelFiles& files, const std::string& name, uint32_t max_tokens);

  // Stops at EOS; skips the other special tokens.
  std::string decode(const std::vector<uint32_t>& ids) const override;
  uint32_t size() const override { return uint32_t(tokens_.size()); }
  std::string describe() const override { return "characters (vocab.json)"; }
  uint32_t unk_id() const { return unk_; }

 protected:
  // Characters outside the vocabulary become unk_id.
  std::vector<uint32_t> encode_valid(std::string_view utf8) const override;

 private:
  std::vector<std::string> tokens_;
  std::unordered_map<std::string, uint32_t> index_;
  uint32_t pad_ = 0, bos_ = 1, eos_ = 2, unk_ = 3;
};

}  // namespace vkf
