// The name any model directory's config.json gives its family.
#include <filesystem>

#include "config_reader.hpp"
#include "vkformer/model.hpp"

namespace vkf {

std::string model_architecture(const ModelFiles& files) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const std::string& directory = files.directory();
  if (files.from_memory()) {
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

}  // namespace vkf
