#pragma once
// Typed, checked fields of a model's config.json: every error names the file and the
// field, and says what the field must be. Shared by every architecture's config.
#include <nlohmann/json.hpp>
#include <string>

#include "vkformer/model_files.hpp"
#include "vkformer/ops.hpp"

namespace vkf {
struct ModelConfig;
}

namespace vkf::model {

// The fields every transformer stack's config has, read and checked together.
struct StackSettings {
  uint32_t d_model = 0, nhead = 0, dim_feedforward = 0;
  Activation activation = Activation::Relu;
  bool norm_first = false;
  float layer_norm_eps = 1e-5f;
};

// Copies the settings into an architecture's config, whose fields have the same names.
template <class Config>
void set_stack(Config& c, const StackSettings& s) {
  c.d_model = s.d_model;
  c.nhead = s.nhead;
  c.dim_feedforward = s.dim_feedforward;
  c.activation = s.activation;
  c.norm_first = s.norm_first;
  c.layer_norm_eps = s.layer_norm_eps;
}

class ConfigReader;
// vkformer's own config.json (the torch-seq2seq family's), read and checked.
ModelConfig torch_seq2seq_config(const ConfigReader& r);

class ConfigReader {
 public:
  explicit ConfigReader(const std::string& path);  // a JSON object, or a clear error
  ConfigReader(const ModelFiles& files, const std::string& name);  // a model's file, such as config.json

  [[noreturn]] void fail(const std::string& why, ErrorKind kind = ErrorKind::Failed) const;
  bool has(const char* key) const { return json_.contains(key) && !json_[key].is_null(); }
  const nlohmann::json& json() const { return json_; }
  const std::string& path() const { return path_; }
  const nlohmann::json& need(const char* key) const;  // present, or an error
  std::string string(const char* key) const;
  // An integer in [min, max] (the default max keeps sizes far from 32-bit overflow).
  uint32_t count(const char* key, uint32_t min, uint32_t max = 1u << 24) const;
  bool flag(const char* key) const;
  float number(const char* key, double min, double max) const;
  Activation activation(const char* key) const;  // "relu" or "gelu"
  // d_model, nhead, dim_feedforward, activation, norm_first, layer_norm_eps; nhead must
  // divide d_model into heads the attention kernel supports.
  StackSettings stack() const;

 private:
  std::string path_;
  nlohmann::json json_;
};

}  // namespace vkf::model
