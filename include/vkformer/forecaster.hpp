#pragma once
// Time-series forecasting with a patch transformer ("torch-patch-forecaster",
// tools/forecast.py): a window is normalised, cut into overlapping patches, embedded
// linearly with sinusoidal positions, read by a transformer encoder, and a linear head
// forecasts the next `horizon` values.
#include <memory>
#include <string>
#include <vector>

#include "vkformer/context.hpp"
#include "vkformer/ops.hpp"

namespace vkf {

struct ForecasterConfig {
  uint32_t window = 30, patch_len = 6, stride = 3, horizon = 7;
  uint32_t d_model = 0, nhead = 0, num_layers = 0, dim_feedforward = 0;
  Activation activation = Activation::Relu;
  bool norm_first = false;
  float layer_norm_eps = 1e-5f;
  uint32_t patches() const { return (window - patch_len) / stride + 1; }
  static ForecasterConfig from_file(const std::string& path);
};

class Forecaster {
 public:
  static std::shared_ptr<const Forecaster> load(Context& ctx, const std::string& directory, DType precision = DType::F32);
  ~Forecaster();
  const ForecasterConfig& config() const;
  // `windows` holds count * window values; returns count * horizon forecasts.
  std::vector<float> predict(const std::vector<float>& windows) const;

  struct Impl;

 private:
  explicit Forecaster(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace vkf
