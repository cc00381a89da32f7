#pragma once
// Tensors from a safetensors file to GPU buffers in a model's precision.
#include <string>
#include <vector>

#include "safetensors.hpp"
#include "weights.hpp"

namespace vkf::model {

class Uploader {
 public:
  Uploader(Context& ctx, const SafeTensors& file, DType dtype) : ctx_(ctx), file_(file), dtype_(dtype) {}

  // Rows [row0, row0 + rows) of a tensor (all of it by default), in the model's precision.
  Buffer tensor(const std::string& name, uint64_t row0 = 0, uint64_t rows = 0);
  Linear linear(const std::string& prefix);
  // A Conv1D (GPT-2): weight [in, out] transposed to Linear's [out, in], and its bias.
  Linear conv1d(const std::string& prefix);
  // Several tensors' rows one after another (Hugging Face's q_proj, k_proj, v_proj as
  // one [3D, D] projection).
  Buffer stacked(const std::vector<std::string>& names);
  // Separate projections under `prefixes` (each .weight [out_i, in] and .bias) as one Linear.
  Linear stacked_linear(const std::vector<std::string>& prefixes);
  // Rows [row0, row0 + rows) as fp32, whatever the model's precision (positional tables).
  Buffer fp32_rows(const std::string& name, uint64_t row0, uint64_t rows);
  // Part of an attention's input projection: rows [row0, row0 + rows) of in_proj.
  Linear in_proj(const std::string& attention, uint32_t row0, uint32_t rows, uint32_t d);
  Norm norm(const std::string& prefix);
  // linear1 and linear2 under `prefix`.
  FeedForward feed_forward(const std::string& prefix);
  // nn.TransformerEncoderLayer's weights under `prefix`.
  EncoderLayer encoder_layer(const std::string& prefix, uint32_t d_model);

 private:
  Context& ctx_;
  const SafeTensors& file_;
  DType dtype_;
};

}  // namespace vkf::model
