#include "config_reader.hpp"

#include <cstdio>

#include "json_file.hpp"

namespace vkf::model {

ConfigReader::ConfigReader(const std::string& path) : path_(path), json_(read_json_object(path, "config")) {}
ConfigReader::ConfigReader(const ModelFiles& files, const std::string& name)
    : path_(files.where(name)), json_(read_json_object(files, name, "config")) {}

void ConfigReader::fail(const std::string& why, ErrorKind kind) const { throw Error("config " + path_ + ": " + why, kind); }

const nlohmann::json& ConfigReader::need(const char* key) const {
  if (!json_.contains(key)) fail(std::string("missing field '") + key + "'");
  return json_[key];
}

std::string ConfigReader::string(const char* key) const {
  const auto& v = need(key);
  if (!v.is_string()) fail(std::string("field '") + key + "' must be a string");
  return v.get<std::string>();
}

uint32_t ConfigReader::count(const char* key, uint32_t min, uint32_t max) const {
  const auto& v = need(key);
  if (!v.is_number_integer() || v.get<int64_t>() < int64_t(min) || v.get<int64_t>() > int64_t(max))
    fail(std::string("field '") + key + "' must be an integer from " + std::to_string(min) + " to " +
         std::to_string(max));
  return v.get<uint32_t>();
}

bool ConfigReader::flag(const char* key) const {
  const auto& v = need(key);
  if (!v.is_boolean()) fail(std::string("field '") + key + "' must be true or false");
  return v.get<bool>();
}

float ConfigReader::number(const char* key, double min, double max) const {
  const auto& v = need(key);
  if (!v.is_number() || !(v.get<double>() >= min && v.get<double>() <= max)) {
    char range[64];
    std::snprintf(range, sizeof range, "%g to %g", min, max);
    fail(std::string("field '") + key + "' must be a number from " + range);
  }
  return v.get<float>();
}

Activation ConfigReader::activation(const char* key) const {
  const auto& v = need(key);
  if (v == "relu") return Activation::Relu;
  if (v == "gelu") return Activation::Gelu;
  fail(std::string("field '") + key + "' must be \"relu\" or \"gelu\"");
}

StackSettings ConfigReader::stack() const {
  StackSettings t;
  t.d_model = count("d_model", 1);
  t.nhead = count("nhead", 1);
  t.dim_feedforward = count("dim_feedforward", 1);
  t.activation = activation("activation");
  t.norm_first = flag("norm_first");
  t.layer_norm_eps = number("layer_norm_eps", 0, 0.1);  // real models: 1e-12 .. 1e-5
  if (t.d_model % t.nhead)
    fail("d_model " + std::to_string(t.d_model) + " is not divisible by nhead " + std::to_string(t.nhead));
  return t;
}

}  // namespace vkf::model
