// Tokenizer::for_model: the tokenizer a model directory carries, picked by its
// architecture and bounded by its config's vocabulary.
#include <algorithm>
#include <filesystem>

#include "bart_tokenizer.hpp"
#include "llama_tokenizer.hpp"
#include "config_reader.hpp"
#include "marian_tokenizer.hpp"
#include "vkformer/error.hpp"
#include "vkformer/model.hpp"
#include "vkformer/tokenizer.hpp"

namespace vkf {

std::unique_ptr<Tokenizer> Tokenizer::for_model(const ModelFiles& files) {
  const std::string architecture = model_architecture(files);
  // The model's vocabulary bounds the tokenizer's, checked before its tables are built.
  const model::ConfigReader config(files, "config.json");
  if (architecture == "marian") {
    uint32_t vocab = config.count("vocab_size", 1);
    if (config.has("decoder_vocab_size")) vocab = std::max(vocab, config.count("decoder_vocab_size", 1));
    return std::make_unique<model::MarianTokenizer>(files, vocab);
  }
  if (architecture == "bart") return std::make_unique<model::BartTokenizer>(files, config.count("vocab_size", 1));
  if (architecture == "gpt2")
    return std::make_unique<model::BartTokenizer>(files, config.count("vocab_size", 1),
                                                  model::BartTokenizer::Flavour::Gpt2);
  if (architecture == "llama" || architecture == "mistral" || architecture == "qwen2") {
    // Llama 2 and TinyLlama ship tokenizer.model (SentencePiece BPE with byte fallback)
    // beside a tokenizer.json converted from it: the model itself is read, through
    // libsentencepiece. Llama 3, SmolLM and Qwen2 ship tokenizer.json alone (byte-level BPE).
    if (files.has("tokenizer.model"))
      return std::make_unique<model::LlamaTokenizer>(files, config.count("vocab_size", 1));
    if (files.has("tokenizer.json"))
      return model::BartTokenizer::from_tokenizer_json(files, config.count("vocab_size", 1));
    throw Error("model " + files.label() + " has no tokenizer (tokenizer.model, SentencePiece's, or tokenizer.json): "
                "give token ids instead", ErrorKind::NotFound);
  }
  if (architecture != "torch-seq2seq")  // the loader's words, so every command says the same
    config.fail(config.has("model_type")
                    ? "model_type '" + architecture + "' is not supported (vkformer runs Hugging Face model_type marian, bart, gpt2, llama, mistral and qwen2)"
                    : "unknown architecture '" + architecture + "' (this vkformer knows: torch-seq2seq, and Hugging Face model_type marian, bart, gpt2, llama, mistral and qwen2)");
  const uint32_t vocab = std::max(config.count("src_vocab_size", 1), config.count("tgt_vocab_size", 1));
  if (!files.has("vocab.json"))
    throw Error("model " + files.label() + " has no vocab.json, the character vocabulary that text needs (its format: "
                "README, \"Bring your own PyTorch model\"; tools/export.py writes it given tokens=[...]); "
                "without one, give token ids instead", ErrorKind::NotFound);
  return std::make_unique<CharTokenizer>(CharTokenizer::from_file(files, "vocab.json", vocab));
}

}  // namespace vkf
