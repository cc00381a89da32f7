// vkformer's own config.json (the torch-seq2seq family's, as tools/seq2seq.py writes it),
// and the name any model directory's config.json gives its family.
#include <filesystem>

#include "config_reader.hpp"
#include "vkformer/model.hpp"

namespace vkf {

std::string model_architecture(const ModelFiles& files) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const std::string& directory = files.directory();
  if (files.gguf()) {
    // llama.cpp's one-file format: its metadata reads as config.json (ModelFiles).
  } else if (files.from_memory()) {
    if (!files.has("config.json")) throw Error("model in memory: config.json is not among its files", ErrorKind::NotFound);
  } else if (!fs::exists(directory, ec)) {
    throw Error("model directory '" + directory + "' does not exist", ErrorKind::NotFound);
  } else if (!fs::is_directory(directory, ec)) {
    throw Error("model '" + directory + "' is a file: a model is the directory that holds config.json and model.safetensors");
  }
  const model::ConfigReader r(files, "config.json");
  if (r.has("architecture")) return r.string("architecture");
  if (r.has("model_type")) return r.string("model_type");  // a Hugging Face directory
  r.fail("missing field 'architecture' (a vkformer model) or 'model_type' (a Hugging Face model)");
}

// vkformer's own config.json, as tools/seq2seq.py writes it.
ModelConfig ModelConfig::from_file(const std::string& path) { return model::torch_seq2seq_config(model::ConfigReader(path)); }

ModelConfig model::torch_seq2seq_config(const model::ConfigReader& r) {
  ModelConfig c;
  c.architecture = r.string("architecture");
  if (c.architecture != "torch-seq2seq")
    r.fail("architecture '" + c.architecture + "' is not torch-seq2seq, vkformer's own format (Model::load names the "
           "families it runs)");
  model::set_stack(c, r.stack());
  c.num_encoder_layers = r.count("num_encoder_layers", 0);
  c.num_decoder_layers = r.count("num_decoder_layers", 0);
  c.src_vocab_size = r.count("src_vocab_size", 1);
  c.tgt_vocab_size = r.count("tgt_vocab_size", 1);
  // Positions are a table computed at load ([max_position, d_model] doubles) and bound
  // every buffer a decode reserves: a far larger value than any model uses is an error,
  // not minutes of work and gigabytes of memory.
  c.max_position = r.count("max_position", 1, 1u << 16);
  if (uint64_t(c.max_position) * c.d_model > (1ull << 26))
    r.fail("max_position x d_model is " + std::to_string(uint64_t(c.max_position) * c.d_model) +
           ", more than the 2^26 positional values vkformer computes");
  c.scale_embedding = r.flag("scale_embedding");
  c.pad_id = r.count("pad_id", 0);
  c.bos_id = r.count("bos_id", 0);
  c.eos_id = r.count("eos_id", 0);
  if (c.pad_id >= c.src_vocab_size) r.fail("pad_id is outside the source vocabulary");
  if (c.bos_id >= c.tgt_vocab_size || c.eos_id >= c.tgt_vocab_size) r.fail("bos_id or eos_id is outside the target vocabulary");
  return c;
}

}  // namespace vkf
