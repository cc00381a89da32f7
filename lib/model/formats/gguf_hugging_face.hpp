#pragma once
// A GGUF file's model seen as the Hugging Face checkpoint llama.cpp's converter made it
// from, so that it loads through the same family code, ModelConfig and weights as a
// Hugging Face directory (no second model): its metadata as the config.json transformers
// would read, its tensors under transformers' names and shapes.
//
// Architectures: `llama` (Llama 1-3, TinyLlama, SmolLM; Mistral converted to `llama`,
// which GGUF gives no sliding window: full attention, as llama.cpp runs it), `qwen2` and
// `gpt2`; any other is refused by name. The converter permutes the `llama` architecture's Q and
// K rows per head ([2, d/2] -> [d/2, 2]) so that llama.cpp's rotary embedding rotates
// adjacent pairs; vkformer rotates halves, as transformers does, so the permutation is
// undone here, a whole row at a time: quantized rows move unchanged (`qwen2` keeps halves).
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "gguf.hpp"
#include "vkformer/blocks.hpp"

namespace vkf::model {

// The config.json (text) a Hugging Face directory of this model would hold.
std::string gguf_hugging_face_config(const Gguf& g);

// A file of the directory the GGUF file stands for (nullopt: it has none of that name):
// config.json (gguf_hugging_face_config), and its tokenizer's. A `llama` tokenizer (SentencePiece: tokenizer.ggml.tokens, scores and
// token_type, byte pieces <0xNN>, add_space_prefix) is its tokenizer.model, built as
// SentencePiece's model proto (a BPE model: llama.cpp merges the highest-scoring pair
// first, as SentencePiece's BPE does), and a tokenizer_config.json with add_bos_token,
// add_eos_token and the special tokens' texts. Tokenizers of other kinds: not yet.
std::optional<std::string> gguf_hugging_face_file(const Gguf& g, const std::string& name);
// Whether the file has such a file (by its tokenizer's kind, without building it: a
// tokenizer vkformer does not read is there, and refused by name when it is read).
bool gguf_hugging_face_has(const Gguf& g, const std::string& name);

struct GgufHfTensor {
  std::vector<uint64_t> shape;      // transformers' order: [out, in]
  std::string ggml_type;            // "F32", "F16", "BF16", or a block type's name
  std::optional<BlockType> blocks;  // where the tensor is in one of the blocks vkformer reads
  const uint8_t* data = nullptr;
  uint64_t bytes = 0;
  // A Conv1D weight (GPT-2's) whose shape is transformers' [in, out] but whose data is
  // llama.cpp's [out, in] rows, as a Linear's: read as it is, not transposed.
  bool rows_are_outputs = false;
};
struct GgufHfTensors {
  std::map<std::string, GgufHfTensor> tensors;
  std::vector<std::vector<uint8_t>> owned;  // Q's and K's rows put back in transformers' order
};
// Every tensor of the file under transformers' name; a tensor vkformer has no place for,
// or in a type it does not read, is refused by name.
GgufHfTensors gguf_hugging_face_tensors(const Gguf& g);

}  // namespace vkf::model
