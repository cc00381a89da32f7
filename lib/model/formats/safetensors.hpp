#pragma once
// A memory-mapped safetensors checkpoint. Each file is a little-endian u64 header length,
// a JSON header {name: {dtype, shape, data_offsets}} (+ optional __metadata__), then raw
// data. A sharded checkpoint is several such files and model.safetensors.index.json,
// whose weight_map names the file of each tensor.
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "mapped_file.hpp"
#include "vkformer/blocks.hpp"
#include "vkformer/model_files.hpp"

namespace vkf::model {

class Gguf;

// Integers: I64, I32, I16, I8, U8 or BOOL, which no weight is; a checkpoint may carry such
// buffers (BERT's position_ids), which loaders leave unread.
enum class TensorType { F32, F16, BF16, Blocks, Integers };

struct TensorInfo {
  TensorType type;
  std::optional<BlockType> blocks;  // TensorType::Blocks: llama.cpp's (a GGUF file's tensor)
  bool rows_are_outputs = false;    // a Conv1D weight [in, out] held as [out, in] rows (GGUF's GPT-2)
  std::vector<uint64_t> shape;
  const uint8_t* data = nullptr;
  uint64_t bytes = 0;
  uint64_t elements() const;
};

class SafeTensors {
 public:
  // One .safetensors file, or (a path ending in .index.json) a sharded checkpoint's
  // index and the shards beside it. Throws vkf::Error naming the file and what is wrong.
  explicit SafeTensors(const std::string& path);
  // The model's file `name` (model.safetensors, or model.safetensors.index.json and its
  // shards), on disk or in memory (read where it is, never copied). A GGUF model's
  // tensors instead, under transformers' names (gguf_hugging_face.hpp).
  SafeTensors(const ModelFiles& files, const std::string& name);
  ~SafeTensors();
  SafeTensors(const SafeTensors&) = delete;
  SafeTensors& operator=(const SafeTensors&) = delete;

  const std::map<std::string, TensorInfo>& tensors() const { return tensors_; }
  const TensorInfo& at(const std::string& name) const;
  // The tensor as fp32 (F16 and BF16 widened exactly, blocks dequantized as llama.cpp does).
  std::vector<float> floats(const std::string& name) const;
  // A tensor in llama.cpp's blocks: its bytes, row after row (nullopt: it is not).
  struct Blocks {
    BlockType type;
    std::span<const uint8_t> bytes;
  };
  std::optional<Blocks> blocks(const std::string& name) const;

 private:
  // Maps one file and adds its tensors; the names it returns are those it held.
  std::vector<std::string> add_file(const ModelFiles& files, const std::string& name);
  void add_shards(const ModelFiles& files, const std::string& index_name);

  std::string path_;
  std::vector<MappedFile> maps_;  // the files on disk, unmapped when dropped (also half-way through a throw)
  std::shared_ptr<const Gguf> gguf_;             // a GGUF model's file, kept mapped
  std::vector<std::vector<uint8_t>> owned_;      // its Q and K rows in transformers' order
  std::map<std::string, TensorInfo> tensors_;
};

}  // namespace vkf::model
