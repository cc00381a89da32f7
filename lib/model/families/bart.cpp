// The BART family (transformers' BartForConditionalGeneration, model_type "bart"): BART's
// layout (hugging_face.cpp) with learned positions (offset by 2, as BartLearnedPositional-
// Embedding does) and layernorm_embedding after each stack's embedding.
#include <filesystem>

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

}  // namespace

const Family kBart{"bart", true, read_config, load_bart_layout_weights};

}  // namespace vkf::model
