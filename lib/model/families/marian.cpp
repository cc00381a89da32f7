// The Marian family (transformers' MarianMTModel, model_type "marian"): BART's layout
// (hugging_face.cpp) with sinusoidal positions computed, not read (sines in the first
// half of each row, cosines in the second), no embedding norm, a target vocabulary of
// its own where config.json gives decoder_vocab_size, and SentencePiece's tokenizer.
#include <algorithm>
#include <filesystem>

#include "family.hpp"
#include "hugging_face.hpp"
#include "marian_tokenizer.hpp"

namespace vkf::model {

namespace {

ModelConfig read_config(const ModelFiles& files) {
  const ConfigReader r(files, "config.json");
  ModelConfig c = read_bart_layout_config(r);
  if (r.has("decoder_vocab_size")) c.tgt_vocab_size = r.count("decoder_vocab_size", 1);
  c.positions = ModelConfig::Positions::Halves;
  finish_bart_layout_config(r, files, c);
  return c;
}

std::unique_ptr<Tokenizer> make_tokenizer(const ModelFiles& files, const ConfigReader& config) {
  uint32_t vocab = config.count("vocab_size", 1);
  if (config.has("decoder_vocab_size")) vocab = std::max(vocab, config.count("decoder_vocab_size", 1));
  return std::make_unique<MarianTokenizer>(files, vocab);
}

}  // namespace

const Family kMarian{"marian", true, ModelTask::Generator, read_config, hf_checkpoint, declare_bart_layout_tensors,
                     make_tokenizer, {"vocab.json", "source.spm"}};

}  // namespace vkf::model
