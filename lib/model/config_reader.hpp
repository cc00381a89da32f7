#pragma once
// Typed, checked fields of a model's config.json: every error names the file and the
// field, and says what the field must be. Shared by every architecture's config.
#include <nlohmann/json.hpp>
#include <string>

#include "vkformer/ops.hpp"

namespace vkf::model {

class ConfigReader {
 public:
  explicit ConfigReader(const std::string& path);  // a JSON object, or a clear error

  [[noreturn]] void fail(const std::string& why) const;
  const nlohmann::json& need(const char* key) const;  // present, or an error
  std::string string(const char* key) const;
  // An integer in [min, max] (the default max keeps sizes far from 32-bit overflow).
  uint32_t count(const char* key, uint32_t min, uint32_t max = 1u << 24) const;
  bool flag(const char* key) const;
  float number(const char* key, double min, double max) const;
  Activation activation(const char* key) const;  // "relu" or "gelu"

 private:
  std::string path_;
  nlohmann::json json_;
};

}  // namespace vkf::model
