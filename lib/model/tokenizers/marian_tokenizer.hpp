#pragma once
// MarianTokenizer as transformers defines it (tokenization_marian.py): SentencePiece
// (Debian's libsentencepiece) cuts the source text into pieces with source.spm, vocab.json
// maps pieces to the model's ids (unknown pieces to <unk>), and EOS is appended; decoding
// maps ids back to pieces, drops the special tokens and joins them with target.spm.
// transformers normalises punctuation first when `sacremoses` is installed; without it
// (as the references were made) the text goes to SentencePiece as it is, and so it does here.
#include <memory>
#include <unordered_map>

#include "hf_text.hpp"
#include "vkformer/tokenizer.hpp"

namespace sentencepiece { class SentencePieceProcessor; }

namespace vkf::model {

class MarianTokenizer : public Tokenizer {
 public:
  // vocab_size: the model's (config.json); a larger vocabulary is refused before its tables are built.
  MarianTokenizer(const ModelFiles& files, uint32_t vocab_size);
  ~MarianTokenizer() override;
  std::string decode(const std::vector<uint32_t>& ids) const override;
  uint32_t size() const override { return uint32_t(pieces_.size()); }
  std::string describe() const override;

 protected:
  std::vector<uint32_t> encode_valid(std::string_view utf8) const override;

 private:
  void encode_text(std::string_view text, std::vector<uint32_t>& ids) const;  // between special tokens
  std::unique_ptr<sentencepiece::SentencePieceProcessor> source_, target_;
  std::unordered_map<std::string, uint32_t> ids_;  // vocab.json
  std::vector<std::string> pieces_;                // its inverse
  uint32_t eos_ = 0, unk_ = 0, pad_ = 0;
  std::vector<SpecialToken> specials_;             // </s>, <unk>, <pad>
};

}  // namespace vkf::model
