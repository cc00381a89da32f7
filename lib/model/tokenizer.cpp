// Tokenizer::for_model: the tokenizer a model directory carries, picked by its architecture.
#include <filesystem>

#include "bart_tokenizer.hpp"
#include "marian_tokenizer.hpp"
#include "vkformer/model.hpp"
#include "vkformer/tokenizer.hpp"

namespace vkf {

std::unique_ptr<Tokenizer> Tokenizer::for_model(const std::string& directory) {
  namespace fs = std::filesystem;
  const std::string architecture = model_architecture(directory);
  if (architecture == "marian") return std::make_unique<model::MarianTokenizer>(directory);
  if (architecture == "bart") return std::make_unique<model::BartTokenizer>(directory);
  return std::make_unique<CharTokenizer>(CharTokenizer::from_file((fs::path(directory) / "vocab.json").string()));
}

}  // namespace vkf
