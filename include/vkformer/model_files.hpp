#pragma once
// A model's files, wherever they are: a directory on disk, or files an app holds in
// memory (config.json and the tokenizer's files as strings, the weights as bytes mapped
// from an asset pack), as ncnn's load_param_mem and onnxruntime's
// OrtCreateSessionFromArray allow. Every loader (configs, checkpoints, tokenizers) reads
// through it, so files from memory get the same checks, limits and errors as the same
// files on disk; only where an error says they are differs ("config.json (in memory)").
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace vkf {

namespace model {
class Gguf;
}

class ModelFiles {
 public:
  // A model directory. Implicit: every loader that took a directory's path still does.
  // A GGUF file (llama.cpp's one-file format) given in its place is a model too: its
  // metadata reads as config.json and its tensors as model.safetensors, under
  // transformers' names (lib/model/formats/gguf_hugging_face.hpp); a malformed one
  // throws here, naming what is wrong.
  ModelFiles(std::string directory);
  ModelFiles(const char* directory) : ModelFiles(std::string(directory ? directory : "")) {}

  // Files in memory, by their names in a model directory ("config.json",
  // "model.safetensors", "vocab.json"...). The bytes are borrowed, not copied: they must
  // stay valid and unchanged while a Model::load or Tokenizer::for_model that reads them
  // runs (the model's weights go to the device, a tokenizer keeps its own tables; neither
  // reads them afterwards). Names are plain file names (no '/', no "." or ".."), each
  // given once; an error names the first that is not.
  struct File {
    std::string name;
    std::string_view bytes;
  };
  // One file named *.gguf and no config.json among them: a GGUF model, as above.
  static ModelFiles in_memory(const std::vector<File>& files);

  // The GGUF file the model is (nullptr for a Hugging Face or vkformer directory).
  const model::Gguf* gguf() const { return gguf_.get(); }
  std::shared_ptr<const model::Gguf> gguf_file() const { return gguf_; }

  bool from_memory() const { return from_memory_; }
  // The directory ("" for files in memory).
  const std::string& directory() const { return directory_; }
  // Whether the model has this file (on disk: it exists, of whatever kind; reading it
  // then refuses a FIFO or a directory by name).
  bool has(const std::string& name) const;
  // Where the file is, for messages: "DIR/name", or "name (in memory)".
  std::string where(const std::string& name) const;
  // The whole file, refused before it is read when larger than `max_bytes`; errors say
  // "<what> <where>: ..." (missing: ErrorKind::NotFound; not a regular file; too large).
  std::string read(const std::string& name, const std::string& what, uint64_t max_bytes) const;
  // A file in memory (the caller checked from_memory() and has()).
  std::string_view memory_file(const std::string& name) const;
  // "model directory 'DIR'" or "model in memory", for messages about the model as a whole.
  std::string describe() const;
  // The directory, or "in memory": messages say "model <label>: ...", as they always did.
  std::string label() const { return from_memory_ ? "in memory" : directory_; }

 private:
  ModelFiles() = default;
  std::string directory_;
  bool from_memory_ = false;
  std::map<std::string, std::string_view> files_;
  std::shared_ptr<const model::Gguf> gguf_;
  std::string gguf_name_;  // its name among files in memory, or its path
};

}  // namespace vkf
