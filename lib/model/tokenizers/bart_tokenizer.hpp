#pragma once
// BartTokenizer as transformers defines it (tokenization_bart.py, the slow one): GPT-2's
// byte-level BPE. Text is cut at the special tokens, each other part into words by GPT-2's
// pattern, each word's UTF-8 bytes are spelled with one printable character per byte,
// merges.txt's merges are applied lowest rank first, and vocab.json gives the ids;
// <s> ... </s> go around the sequence. Decoding maps the characters back to bytes.
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "hf_text.hpp"
#include "vkformer/tokenizer.hpp"

namespace vkf::model {

class GptPattern;  // GPT-2's pre-tokenizer pattern, compiled by PCRE2

class BartTokenizer : public Tokenizer {
 public:
  // The two tokenizers of this kind transformers has: BartTokenizer (<s> ... </s> around
  // the ids; <s>, </s>, <unk>, <pad>, <mask> special) and GPT2Tokenizer (the ids alone;
  // <|endoftext|> special as BOS, EOS and unknown).
  enum class Flavour { Bart, Gpt2 };
  // vocab_size: the model's (config.json); a larger vocabulary is refused before its tables are built.
  BartTokenizer(const ModelFiles& files, uint32_t vocab_size, Flavour flavour = Flavour::Bart);
  // The same byte-level BPE from the directory's tokenizer.json (the `tokenizers` library's
  // file, which every current hub model ships: SmolLM's, Llama 3's), as transformers' fast
  // tokenizer runs it: its added tokens, a ByteLevel pre-tokenizer (GPT-2's pattern) or a
  // Split by the file's own pattern (Llama 3's, Qwen2's) then ByteLevel, BPE with or
  // without ignore_merges, the special tokens its TemplateProcessing puts around a text.
  // Anything else in the file that would change the ids (a normalizer, byte fallback,
  // dropout...) is refused by name.
  static std::unique_ptr<BartTokenizer> from_tokenizer_json(const ModelFiles& files, uint32_t vocab_size);
  ~BartTokenizer() override;
  std::string decode(const std::vector<uint32_t>& ids) const override;
  uint32_t size() const override { return uint32_t(tokens_.size()); }
  std::string describe() const override;

  // The byte-level BPE of one word (a piece of GPT-2's pattern), as vocabulary tokens.
  std::vector<std::string> bpe(std::string_view word) const;
  static constexpr size_t kLongWord = 256;  // symbols past which bpe() takes bpe_by_rank()'s heap

 protected:
  std::vector<uint32_t> encode_valid(std::string_view utf8) const override;

 private:
  // What a byte-level BPE needs of its tables, checked at load (tokenizers' BPE refuses
  // the same): every merge's two symbols and its result in the vocabulary, and (byte-level,
  // not SentencePiece-style) every byte's symbol, so no text silently becomes the unknown
  // token or another token's id. Errors name the merges' file or the vocabulary's.
  void check_tables(const std::string& merges_file, const std::string& vocab_file) const;

  BartTokenizer() = default;  // from_tokenizer_json fills it
  void encode_text(std::string_view text, std::vector<uint32_t>& ids) const;
  void encode_words(std::string_view text, std::vector<uint32_t>& ids) const;  // the pre-tokenizer's words, each encoded
  void encode_word(std::string_view word, std::vector<uint32_t>& ids) const;  // one word of the pattern, byte-level
  void encode_sentencepiece_style(std::string_view text, std::vector<uint32_t>& ids) const;  // byte_fallback
  std::vector<std::string> bpe_by_rank(std::vector<std::string> symbols) const;
  uint32_t id_of(const std::string& token) const;

  std::unique_ptr<GptPattern> pattern_;
  // tokenizer.json's Digits pre-tokenizer (individual digits: SmolLM's) before the
  // pattern: each digit a piece of its own, the pattern run on every piece.
  std::unique_ptr<GptPattern> digits_;
  std::unordered_map<std::string, uint32_t> ids_;    // vocab.json (and <mask> when it lacks it)
  std::vector<std::string> tokens_;                  // its inverse
  std::unordered_map<std::string, uint32_t> ranks_;  // "first second" -> merges.txt's order
  std::vector<SpecialToken> specials_;               // matched in the text as tokens of their own
  uint32_t bos_ = 0, eos_ = 2, unk_ = 3;
  bool add_prefix_space_ = false, clean_up_spaces_ = true;
  bool wrap_ = true;  // <s> ... </s> around the ids (BART)
  size_t merges_ = 0;
  // tokenizer.json's: the ids its post-processor puts before and after a text, a word
  // that is a token as a whole taken as it is (ignore_merges), and what it was read from.
  std::vector<uint32_t> prefix_, suffix_;
  bool ignore_merges_ = false;
  std::vector<uint32_t> special_ids_;  // tokenizer.json's added tokens marked special (skipped when decoding)
  std::string source_;
  bool spm_ = false, fuse_unk_ = false;
  bool nfc_ = false;  // tokenizer.json's NFC normalizer (Qwen2's)  // tokenizer.json's SentencePiece-style BPE (byte_fallback)
};

}  // namespace vkf::model
