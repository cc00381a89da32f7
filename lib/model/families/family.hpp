#pragma once
// A model family: the file that maps its config.json and checkpoint names onto vkformer's
// description of a transformer, which every family shares: ModelConfig (the stacks, an
// encoder and a decoder with or without cross-attention, and the per-family choices:
// norm placement, positions, activation, heads) and Model::Impl (each stack's weights).
// The forward pass (graph/) and decoding (decoding/) read only that description: adding
// a family adds a file here and its tests, never a second forward pass.
#include <memory>
#include <string>

#include "seq2seq.hpp"

namespace vkf::model {

struct Family {
  const char* name;  // config.json's "architecture" (vkformer's format) or "model_type" (Hugging Face)
  bool hugging_face;  // named by model_type, in a save_pretrained directory
  // config.json (and generation_config.json): errors name the file and the field, and
  // settings that would change the computation and vkformer does not run are refused.
  ModelConfig (*read_config)(const ModelFiles& files);
  // The checkpoint, checked by name and shape before anything is uploaded.
  std::unique_ptr<Model::Impl> (*load_weights)(Context& ctx, const ModelFiles& files, const ModelConfig& config,
                                               DType precision);
};

// One per file: torch_seq2seq.cpp, marian.cpp, bart.cpp, gpt2.cpp, llama.cpp (Llama, Mistral, Qwen2).
extern const Family kTorchSeq2Seq, kMarian, kBart, kGpt2, kLlama, kMistral, kQwen2;

}  // namespace vkf::model
