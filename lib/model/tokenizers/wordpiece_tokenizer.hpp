#pragma once
// BERT's WordPiece tokenizer, as transformers runs it from either of the files a BERT
// directory ships:
//   tokenizer.json (BertTokenizerFast, the `tokenizers` library): BertNormalizer (clean the
//     text, space out CJK characters, strip accents, lower-case), BertPreTokenizer (words
//     at whitespace, each punctuation character a word), WordPiece, and the post-
//     processor's [CLS] ... [SEP];
//   vocab.txt + tokenizer_config.json (BertTokenizer, the slow one): the same steps as
//     BasicTokenizer orders them (NFC first, lower-casing by Python's str.lower before
//     accents are stripped, never_split words left whole).
// Text is cut at the special tokens first; each word is split greedily into the
// vocabulary's longest pieces, "##" before each piece after the first, and a word with
// no such split (or longer than max_input_chars_per_word characters) is one [UNK].
// Unicode's categories, decompositions and case mappings come from utf8proc.
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "hf_text.hpp"
#include "vkformer/tokenizer.hpp"

namespace vkf::model {

// The text rules of BertNormalizer / BasicTokenizer.
struct BertTextRules {
  bool clean_text = true;       // drop control characters, U+0000 and U+FFFD; whitespace becomes ' '
  bool chinese_chars = true;    // a space either side of each CJK ideograph
  bool lowercase = true;
  bool strip_accents = true;    // NFD, then no Mn (nonspacing marks); null in a file: as lowercase
  bool python_rules = false;    // BertTokenizer's order and Python's str.lower (final sigma)
  std::unordered_set<std::string> never_split;  // BertTokenizer's words left whole
};

// One text's ids and their token types (a pair's second text is type 1).
struct WordPieceIds {
  std::vector<uint32_t> ids, types;
  bool truncated = false;  // content was cut to fit
};

class WordPieceTokenizer : public Tokenizer {
 public:
  // vocab_size: the model's; a larger vocabulary is refused before its tables are built.
  static std::unique_ptr<WordPieceTokenizer> from_tokenizer_json(const ModelFiles& files, uint32_t vocab_size);
  static std::unique_ptr<WordPieceTokenizer> from_vocab_txt(const ModelFiles& files, uint32_t vocab_size);
  // tokenizer.json where the directory has it (transformers' AutoTokenizer and
  // sentence-transformers take the fast tokenizer), else vocab.txt.
  static std::unique_ptr<WordPieceTokenizer> for_model(const ModelFiles& files, uint32_t vocab_size);

  std::string decode(const std::vector<uint32_t>& ids) const override;
  uint32_t size() const override { return uint32_t(tokens_.size()); }
  std::string describe() const override;

  // [CLS] text [SEP] with at most `max_tokens` ids in all (0: no bound): the text's own
  // tokens are cut at the end where they do not fit, as transformers' truncation does.
  // Words past the cut are not tokenized, so a long text costs its normalisation only.
  WordPieceIds encode_one(std::string_view utf8, size_t max_tokens = 0) const;
  // [CLS] a [SEP] b [SEP], a's tokens type 0 and b's type 1; at most `max_tokens` in all,
  // cut as longest_first does (tokenizers' rule for tokenizer.json, transformers' for
  // vocab.txt: they differ where the two texts are cut to the same length).
  WordPieceIds encode_pair(std::string_view a, std::string_view b, size_t max_tokens = 0) const;
  // The text's words after normalisation and pre-tokenization, special tokens not set
  // apart (as tokenizers' normalize_str and pre_tokenize_str give them).
  std::vector<std::string> words(std::string_view utf8) const;
  uint32_t pad_id() const { return pad_; }
  uint32_t unk_id() const { return unk_; }

 protected:
  std::vector<uint32_t> encode_valid(std::string_view utf8) const override;

 private:
  WordPieceTokenizer() = default;
  // Splits the text at special tokens; the other parts become words, then WordPiece ids,
  // appended to `ids` until `most` of them (0: no bound). Returns whether it stopped short.
  bool encode_text(std::string_view utf8, size_t most, std::vector<uint32_t>& ids) const;
  void normalized_words(std::string_view text, std::vector<std::u32string>& words) const;
  void word_pieces(const std::u32string& word, std::vector<uint32_t>& ids) const;
  void check_text(std::string_view utf8) const;
  void finish(const std::string& file);  // the tables' checks

  BertTextRules rules_;
  std::unordered_map<std::string, uint32_t> ids_;
  std::vector<std::string> tokens_;
  std::vector<SpecialToken> specials_;
  std::vector<bool> special_;  // by id: left out of decoded text
  std::string prefix_ = "##";
  size_t max_word_chars_ = 100, longest_token_chars_ = 1;
  uint32_t unk_ = 100, cls_ = 101, sep_ = 102, pad_ = 0;
  bool cleanup_ = true;  // the decoder's clean_up_tokenization
  std::string source_;
};

}  // namespace vkf::model
