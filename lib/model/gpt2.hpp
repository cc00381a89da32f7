#pragma once
// GPT-2 (transformers' GPT2LMHeadModel) from the directory save_pretrained writes.
#include <memory>
#include <string>

#include "seq2seq.hpp"

namespace vkf::model {

// config.json (model_type "gpt2"): errors name the file and the field; settings that
// would change the computation and vkformer does not run are refused by name.
ModelConfig read_gpt2_config(const std::string& directory);

// model.safetensors (or its shards), checked by name and shape before anything is
// uploaded, as a decoder stack without cross-attention.
std::unique_ptr<Model::Impl> load_gpt2_weights(Context& ctx, const std::string& directory, const ModelConfig& config,
                                               DType precision);

}  // namespace vkf::model
