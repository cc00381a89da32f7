// The BART family (transformers' BartForConditionalGeneration, model_type "bart"): BART's
// layout (hugging_face.cpp) with learned positions (offset by 2, as BartLearnedPositional-
// Embedding does), layernorm_embedding after each stack's embedding, and GPT-2's
// byte-level BPE as its tokenizer.
#include <filesystem>

#include "bart_tokenizer.hpp"
#include "family.hpp"
#include "hugging_face.hpp"

namespace vkf::model {

namespace {

ModelConfig read_config(const ModelFiles& files) {
  const ConfigReader r(files, "config.json");
  ModelConfig c = read_bart_layout_config(r);
  c.positions = ModelConfig::Positions::Learned;
  c.embedding_norm = true;
  if (r.has("normalize_embedding") && !r.flag("normalize_embedding"))
    r.fail("field 'normalize_embedding' is false; vkformer runs BART with its layernorm_embedding");
  finish_bart_layout_config(r, files, c);
  return c;
}

std::unique_ptr<Tokenizer> make_tokenizer(const ModelFiles& files, const ConfigReader& config) {
  return std::make_unique<BartTokenizer>(files, config.count("vocab_size", 1));
}

}  // namespace

const Family kBart{"bart", true, ModelTask::Generator, read_config, hf_checkpoint, declare_bart_layout_tensors,
                   make_tokenizer, {"vocab.json", "merges.txt"}};

}  // namespace vkf::model
