#pragma once
// A model family: one entry in the registry (registry.cpp) that says everything about it:
// the config.json names it answers to, how to read its config onto vkformer's description
// of a transformer (ModelConfig: the stacks, an encoder and a decoder with or without
// cross-attention, and the per-family choices: norm placement, positions, activation,
// heads), how to declare its checkpoint's tensors onto Model::Impl (each once:
// checkpoint.hpp), and how to make its tokenizer. The forward pass (graph/) and decoding
// (decoding/) read only that description: adding a family adds a file here, its entry in
// the registry and its tests, never a second forward pass.
#include <array>
#include <memory>
#include <string>

#include "checkpoint.hpp"
#include "config_reader.hpp"
#include "model_impl.hpp"
#include "vkformer/tokenizer.hpp"

namespace vkf::model {

struct Family {
  const char* name;   // config.json's "architecture" (vkformer's format) or "model_type" (Hugging Face)
  bool hugging_face;  // named by model_type, in a save_pretrained directory
  ModelTask kind;
  // config.json (and generation_config.json): errors name the file and the field, and
  // settings that would change the computation and vkformer does not run are refused.
  ModelConfig (*read_config)(const ModelFiles& files);
  // The checkpoint's file in the directory: model.safetensors, or a sharded one's index.
  std::string (*checkpoint)(const ModelFiles& files);
  // Each tensor of the checkpoint, declared once onto the model's weights.
  void (*declare_tensors)(Checkpoint& checkpoint, Model::Impl& model);
  // Its tokenizer, bounded by the config's vocabulary, and the files it is read from
  // (one of them there: the directory carries a tokenizer; none: ids only).
  std::unique_ptr<Tokenizer> (*make_tokenizer)(const ModelFiles& files, const ConfigReader& config);
  std::array<const char*, 3> tokenizer_files;
};

// The family of a model directory, or an Error listing those the registry has.
const Family& family_of(const ModelFiles& files);

// What every loaded model must pass on this device, checked once for every family and
// the forecaster: its heads fit the fused attention kernels, fp16 storage where asked.
void check_runs_here(Context& ctx, const ModelFiles& files, uint32_t head_dim, DType precision);

// One per file: torch_seq2seq.cpp, marian.cpp, bart.cpp, gpt2.cpp, llama.cpp (Llama,
// Mistral, Qwen2), forecaster.cpp, bert.cpp (BERT, RoBERTa, DistilBERT).
extern const Family kTorchSeq2Seq, kMarian, kBart, kGpt2, kLlama, kMistral, kQwen2, kForecaster, kBert, kRoberta,
    kDistilBert;

}  // namespace vkf::model
