#include "model/json_file.hpp"

#include "vkformer/error.hpp"
#include "vkformer/model.hpp"

namespace vkf {

ModelConfig ModelConfig::from_file(const std::string& path) {
  auto fail = [&](const std::string& why) { throw Error("config " + path + ": " + why); };
  const nlohmann::json j = model::read_json_object(path, "config");
  auto need = [&](const char* key) -> const nlohmann::json& {
    if (!j.contains(key)) fail(std::string("missing field '") + key + "'");
    return j[key];
  };
  auto count = [&](const char* key, uint32_t min) {
    const auto& v = need(key);
    if (!v.is_number_integer() || v.get<int64_t>() < int64_t(min) || v.get<int64_t>() > (1ll << 30))
      fail(std::string("field '") + key + "' must be an integer >= " + std::to_string(min));
    return v.get<uint32_t>();
  };
  auto flag = [&](const char* key) {
    const auto& v = need(key);
    if (!v.is_boolean()) fail(std::string("field '") + key + "' must be true or false");
    return v.get<bool>();
  };
  ModelConfig c;
  const auto& arch = need("architecture");
  if (!arch.is_string()) fail("field 'architecture' must be a string");
  c.architecture = arch.get<std::string>();
  if (c.architecture != "torch-seq2seq")
    fail("unknown architecture '" + c.architecture + "' (this vkformer knows: torch-seq2seq)");
  c.d_model = count("d_model", 1);
  c.nhead = count("nhead", 1);
  c.num_encoder_layers = count("num_encoder_layers", 0);
  c.num_decoder_layers = count("num_decoder_layers", 0);
  c.dim_feedforward = count("dim_feedforward", 1);
  const auto& act = need("activation");
  if (act == "relu") c.activation = Activation::Relu;
  else if (act == "gelu") c.activation = Activation::Gelu;
  else fail("field 'activation' must be \"relu\" or \"gelu\"");
  c.norm_first = flag("norm_first");
  const auto& eps = need("layer_norm_eps");
  if (!eps.is_number() || !(eps.get<double>() >= 0)) fail("field 'layer_norm_eps' must be a non-negative number");
  c.layer_norm_eps = eps.get<float>();
  c.src_vocab_size = count("src_vocab_size", 1);
  c.tgt_vocab_size = count("tgt_vocab_size", 1);
  c.max_position = count("max_position", 1);
  c.scale_embedding = flag("scale_embedding");
  c.pad_id = count("pad_id", 0);
  c.bos_id = count("bos_id", 0);
  c.eos_id = count("eos_id", 0);
  if (c.d_model % c.nhead) fail("d_model " + std::to_string(c.d_model) + " is not divisible by nhead " + std::to_string(c.nhead));
  if (c.pad_id >= c.src_vocab_size) fail("pad_id is outside the source vocabulary");
  if (c.bos_id >= c.tgt_vocab_size || c.eos_id >= c.tgt_vocab_size) fail("bos_id or eos_id is outside the target vocabulary");
  return c;
}

}  // namespace vkf
