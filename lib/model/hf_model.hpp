#pragma once
// Hugging Face encoder-decoders (MarianMTModel, BartForConditionalGeneration) straight
// from the directory save_pretrained writes: config.json (+ generation_config.json) and
// model.safetensors, tied weights dropped and Marian's position table absent.
#include <memory>
#include <string>

#include "seq2seq.hpp"

namespace vkf::model {

// The checkpoint of a save_pretrained directory: model.safetensors, or the index of its
// shards; an error naming what is there instead (a pickle) or missing.
std::string hf_checkpoint(const std::string& directory);

// generation_config.json (or, in older checkpoints, the same keys in config.json) into
// c.generation: what generate() honours is read, what would change its output and
// vkformer does not do is refused by name.
void read_hf_generation(const std::string& directory, ModelConfig& c);

// config.json and generation_config.json: errors name the file and the field.
ModelConfig read_hf_config(const std::string& directory);

// The weights of a directory whose config read_hf_config returned, checked by name and
// shape before anything is uploaded.
std::unique_ptr<Model::Impl> load_hf_weights(Context& ctx, const std::string& directory, const ModelConfig& config,
                                             DType precision);

}  // namespace vkf::model
