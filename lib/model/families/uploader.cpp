#include "uploader.hpp"

#include "vkformer/tensor_io.hpp"

namespace vkf::model {

Buffer Uploader::tensor(const std::string& name, uint64_t row0, uint64_t rows) {
  auto f = file_.floats(name);
  const auto& shape = file_.at(name).shape;
  const uint64_t width = shape.size() > 1 ? shape[1] : 1;
  if (!rows) rows = shape[0];
  return upload_floats(ctx_, std::span<const float>(f.data() + row0 * width, rows * width), dtype_, name);
}

Linear Uploader::linear(const std::string& p) {
  const auto& s = file_.at(p + ".weight").shape;
  return {tensor(p + ".weight"), tensor(p + ".bias"), uint32_t(s[0]), uint32_t(s[1])};
}

Linear Uploader::conv1d(const std::string& p) {
  const auto& s = file_.at(p + ".weight").shape;
  const uint64_t in = s[0], out = s[1];
  const auto w = file_.floats(p + ".weight");
  std::vector<float> t(w.size());
  for (uint64_t i = 0; i < in; ++i)
    for (uint64_t o = 0; o < out; ++o) t[o * in + i] = w[i * out + o];
  return {upload_floats(ctx_, std::span<const float>(t), dtype_, p + ".weight"), tensor(p + ".bias"), uint32_t(out),
          uint32_t(in)};
}

Buffer Uploader::stacked(const std::vector<std::string>& names) {
  std::vector<float> all;
  for (const auto& n : names) {
    const auto f = file_.floats(n);
    all.insert(all.end(), f.begin(), f.end());
  }
  return upload_floats(ctx_, std::span<const float>(all), dtype_, names.front());
}

Linear Uploader::stacked_linear(const std::vector<std::string>& prefixes) {
  std::vector<std::string> weights, biases;
  uint32_t out = 0;
  for (const auto& p : prefixes) {
    weights.push_back(p + ".weight");
    biases.push_back(p + ".bias");
    out += uint32_t(file_.at(p + ".weight").shape[0]);
  }
  return {stacked(weights), stacked(biases), out, uint32_t(file_.at(weights[0]).shape[1])};
}

Buffer Uploader::fp32_rows(const std::string& name, uint64_t row0, uint64_t rows) {
  const auto f = file_.floats(name);
  const uint64_t width = file_.at(name).shape[1];
  return upload_floats(ctx_, std::span<const float>(f.data() + row0 * width, rows * width), DType::F32, name);
}

Linear Uploader::in_proj(const std::string& p, uint32_t row0, uint32_t rows, uint32_t d) {
  return {tensor(p + ".in_proj_weight", row0, rows), tensor(p + ".in_proj_bias", row0, rows), rows, d};
}

Norm Uploader::norm(const std::string& p) { return {tensor(p + ".weight"), tensor(p + ".bias")}; }

FeedForward Uploader::feed_forward(const std::string& p) { return {linear(p + ".linear1"), linear(p + ".linear2")}; }

EncoderLayer Uploader::encoder_layer(const std::string& p, uint32_t d) {
  return {.self_qkv = in_proj(p + ".self_attn", 0, 3 * d, d),
          .self_out = linear(p + ".self_attn.out_proj"),
          .ffn = feed_forward(p),
          .norm1 = norm(p + ".norm1"),
          .norm2 = norm(p + ".norm2")};
}

}  // namespace vkf::model
