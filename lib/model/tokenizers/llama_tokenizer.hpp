#pragma once
// LlamaTokenizer as transformers 4.36 defines it (tokenization_llama.py, the slow one):
// Llama 2's and TinyLlama's tokenizer.model, a SentencePiece BPE model with byte fallback,
// run by Debian's libsentencepiece. tokenizer_config.json says whether BOS and EOS go
// around a text and whether the "legacy" rules hold: legacy, SentencePiece adds the
// word-boundary mark to every piece of text between special tokens; not legacy (Llama 2's
// and TinyLlama's files), once to the whole text. Decoding skips the special tokens and
// drops the first piece's boundary mark, as transformers does.
#include <memory>
#include <string>
#include <vector>

#include "hf_text.hpp"
#include "vkformer/tokenizer.hpp"

namespace sentencepiece { class SentencePieceProcessor; }

namespace vkf::model {

class LlamaTokenizer : public Tokenizer {
 public:
  // vocab_size: the model's (config.json); a larger vocabulary is refused.
  LlamaTokenizer(const ModelFiles& files, uint32_t vocab_size);
  ~LlamaTokenizer() override;
  std::string decode(const std::vector<uint32_t>& ids) const override;
  uint32_t size() const override { return size_; }
  std::string describe() const override;

 protected:
  std::vector<uint32_t> encode_valid(std::string_view utf8) const override;

 private:
  // transformers' _tokenize: one piece of text between special tokens, as ids.
  void encode_text(std::string_view text, std::vector<uint32_t>& ids) const;
  std::unique_ptr<sentencepiece::SentencePieceProcessor> sp_;
  uint32_t size_ = 0;
  bool legacy_ = true, add_bos_ = true, add_eos_ = false, clean_up_spaces_ = false;
  uint32_t bos_ = 0, eos_ = 0, unk_ = 0;
  std::string unk_text_;
  size_t unk_pieces_ = 0;             // how many pieces unk_text_ is as plain text (transformers' unk_token_length)
  std::vector<SpecialToken> specials_;  // written in text, they are tokens of their own
  std::vector<bool> special_;           // by id: skipped when decoding
};

}  // namespace vkf::model
