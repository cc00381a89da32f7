// The Marian family (transformers' MarianMTModel, model_type "marian"): BART's layout
// (hugging_face.cpp) with sinusoidal positions computed, not read (sines in the first
// half of each row, cosines in the second), no embedding norm, and a target vocabulary
// of its own where config.json gives decoder_vocab_size.
#include <filesystem>

#include "family.hpp"
#include "hugging_face.hpp"

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

}  // namespace

const Family kMarian{"marian", true, read_config, load_bart_layout_weights};

}  // namespace vkf::model
