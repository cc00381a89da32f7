#pragma once
// What a GGUF file (llama.cpp's one-file model format: hyperparameters, tokenizer and
// weights in one file) holds, read from its header and tensor infos with every count,
// offset and size checked against the file (`vkformer info --model FILE.gguf`).
// A GGUF file of an architecture vkformer runs (llama, qwen2) is also a model:
// Model::load, vkf_model_load and every command's --model take one (ModelFiles).
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace vkf {

struct GgufSummary {
  std::string file;
  uint32_t version = 0;
  uint64_t bytes = 0, alignment = 0;
  std::string architecture;  // general.architecture ("llama", "qwen2", "gpt2", ...)
  std::string name;          // general.name, where given
  std::string file_type;     // general.file_type as llama.cpp names it ("Q4_K_M"), where given
  // The architecture's hyperparameters as the file states them, its keys without the
  // architecture's prefix ("block_count", "attention.head_count", ...), in the file's order.
  std::vector<std::pair<std::string, std::string>> hyperparameters;
  std::string tokenizer;  // "gpt2 (pre llama-bpe), 128256 tokens", "llama, 32000 tokens", or "none"
  struct Storage {
    std::string type;  // ggml's name: "Q4_K", "F32", ...
    uint64_t tensors = 0, bytes = 0;
  };
  std::vector<Storage> storage;  // by type, most bytes first
  uint64_t tensors = 0, metadata = 0;
  // Whether vkformer runs the model the file holds, and if not why ("" where it does).
  bool runs = false;
  std::string why_not;
};

// Whether the file at `path` is a regular file that starts with GGUF's magic.
bool is_gguf_file(const std::string& path);
// The file's summary; throws vkf::Error naming what is wrong with a malformed file.
GgufSummary describe_gguf(const std::string& path);

}  // namespace vkf
