#pragma once
// A sentence-transformers directory's modules (modules.json and the configs of its
// modules) read onto EmbedderConfig: what the Embedder runs after the encoder.
#include "vkformer/embedder.hpp"
#include "vkformer/model_files.hpp"

namespace vkf::model {

// width: the encoder's hidden size; max_position: its positions. Errors name the file
// and the module or field; modules and modes vkformer does not run are refused by name.
EmbedderConfig read_sentence_transformers(const ModelFiles& files, uint32_t width, uint32_t max_position);

}  // namespace vkf::model
