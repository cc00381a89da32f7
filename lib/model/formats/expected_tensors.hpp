#pragma once
// The tensors an architecture's config implies, by name and shape, checked against a
// safetensors file before anything reaches the GPU: every one present with its shape,
// nothing else in the file. Errors name the model directory and the tensor.
#include <string>
#include <utility>
#include <vector>

#include "safetensors.hpp"

namespace vkf::model {

using Shape = std::vector<uint64_t>;

class ExpectedTensors {
 public:
  void add(const std::string& name, Shape shape) { tensors_.emplace_back(name, std::move(shape)); }
  void linear(const std::string& prefix, uint64_t out, uint64_t in);  // weight [out, in], bias [out]
  void norm(const std::string& prefix, uint64_t d);                   // weight and bias [d]
  // nn.MultiheadAttention: in_proj_weight [3D, D], in_proj_bias [3D], out_proj [D, D]
  void attention(const std::string& prefix, uint64_t d);
  // nn.TransformerEncoderLayer (self_attn, linear1, linear2, norm1, norm2)
  void encoder_layer(const std::string& prefix, uint64_t d, uint64_t ffn);

  // Throws unless `file` holds exactly these tensors with these shapes.
  void check(const SafeTensors& file, const std::string& directory, const std::string& architecture) const;

 private:
  std::vector<std::pair<std::string, Shape>> tensors_;
};

// Throws when the config's `field` asks for more layers (`count`) than the checkpoint
// holds under `prefix` ("model.encoder.layers"). Checked before anything
// is built per layer, so a config claiming a million layers is refused at the cost of
// one pass over the tensor names, not gigabytes of expected names.
void check_layer_count(const SafeTensors& file, const std::string& directory, const std::string& prefix,
                       uint32_t count, const std::string& field);

}  // namespace vkf::model
