#pragma once
// What every Hugging Face family shares: the directory save_pretrained writes (config.json,
// generation_config.json, model.safetensors or its shards), GenerationConfig's settings,
// and BART's encoder-decoder layout, which MarianMTModel shares (transformers derives its
// code from BART's): the names and the fields both families read the same way.
#include <memory>
#include <string>

#include "checkpoint.hpp"
#include "config_reader.hpp"
#include "model_impl.hpp"

namespace vkf::model {

// The checkpoint of a save_pretrained directory: model.safetensors, or the index of its
// shards; an error naming what is there instead (a pickle) or missing.
std::string hf_checkpoint(const ModelFiles& files);

// generation_config.json (or, in older checkpoints, the same keys in config.json) into
// c.generation: what generate() honours is read, what would change its output and
// vkformer does not do is refused by name.
void read_hf_generation(const ModelFiles& files, ModelConfig& c);

// config.json's activation_function, and a token id field (an integer, or a list of one).
Activation hf_activation(const ConfigReader& r);
uint32_t hf_token_id(const ConfigReader& r, const char* key, uint32_t vocab);

// The fields of BART's layout (d_model, heads, layers, FFN width, vocabulary, positions'
// count, pre-norm refused): the family file then sets what is its own (positions, the
// embedding norm, the target vocabulary) and calls finish_bart_layout_config.
ModelConfig read_bart_layout_config(const ConfigReader& r);
// The special ids and the generation settings, once the vocabularies are known.
void finish_bart_layout_config(const ConfigReader& r, const ModelFiles& files, ModelConfig& c);

// The tensors under BART's names (q/k/v stacked into one projection, the shared
// embedding serving both stacks and, tied, the output projection, whose bias is
// final_logits_bias).
void declare_bart_layout_tensors(Checkpoint& checkpoint, Model::Impl& model);

}  // namespace vkf::model
