// The patch forecaster: patch embedding as one GEMM whose A rows overlap (lda = stride
// over the series), positions added in its epilogue (a residual broadcast over the
// batch), the shared encoder layers, and a linear head over the flattened patches.
#include "vkformer/forecaster.hpp"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "model/encoder_stack.hpp"
#include "model/json_file.hpp"
#include "model/tensor_io.hpp"
#include "model/uploader.hpp"

namespace vkf {

ForecasterConfig ForecasterConfig::from_file(const std::string& path) {
  auto fail = [&](const std::string& why) { throw Error("config " + path + ": " + why); };
  const nlohmann::json j = model::read_json_object(path, "config");
  if (j.value("architecture", "") != "torch-patch-forecaster")
    fail("architecture must be \"torch-patch-forecaster\", got '" + j.value("architecture", "") + "'");
  auto count = [&](const char* key) {
    if (!j.contains(key) || !j[key].is_number_integer() || j[key].get<int64_t>() < 1 || j[key].get<int64_t>() > (1 << 24))
      fail(std::string("field '") + key + "' must be a positive integer");
    return j[key].get<uint32_t>();
  };
  ForecasterConfig c;
  c.window = count("window");
  c.patch_len = count("patch_len");
  c.stride = count("stride");
  c.horizon = count("horizon");
  c.d_model = count("d_model");
  c.nhead = count("nhead");
  c.num_layers = count("num_layers");
  c.dim_feedforward = count("dim_feedforward");
  const std::string act = j.value("activation", "relu");
  if (act != "relu" && act != "gelu") fail("field 'activation' must be \"relu\" or \"gelu\"");
  c.activation = act == "gelu" ? Activation::Gelu : Activation::Relu;
  c.norm_first = j.value("norm_first", false);
  c.layer_norm_eps = j.value("layer_norm_eps", 1e-5f);
  if (c.patch_len > c.window) fail("patch_len is longer than the window");
  if (c.d_model % c.nhead) fail("d_model is not divisible by nhead");
  return c;
}

struct Forecaster::Impl {
  Context& ctx;
  ForecasterConfig config;
  DType dtype;
  Linear patch_embed, head;
  Buffer positions;  // [patches, d_model] in the model's precision
  std::vector<EncoderLayer> layers;
  Norm final_norm;
};

Forecaster::Forecaster(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Forecaster::~Forecaster() = default;
const ForecasterConfig& Forecaster::config() const { return impl_->config; }

std::shared_ptr<const Forecaster> Forecaster::load(Context& ctx, const std::string& dir, DType precision) {
  namespace fs = std::filesystem;
  auto c = ForecasterConfig::from_file((fs::path(dir) / "config.json").string());
  model::SafeTensors file((fs::path(dir) / "model.safetensors").string());
  const uint64_t D = c.d_model, P = c.patches();
  auto expect = [&](const std::string& name, std::vector<uint64_t> shape) {
    if (file.at(name).shape != shape) throw Error("model " + dir + ": tensor '" + name + "' has the wrong shape");
  };
  expect("patch_embed.weight", {D, c.patch_len});
  expect("head.weight", {c.horizon, P * D});
  expect("encoder.norm.weight", {D});
  size_t expected = 6 + 12 * size_t(c.num_layers);
  if (file.tensors().size() != expected)
    throw Error("model " + dir + ": " + std::to_string(file.tensors().size()) + " tensors, a forecaster with this config has " +
                std::to_string(expected));
  auto m = std::make_unique<Impl>(Impl{ctx, c, precision, {}, {}, {}, {}, {}});
  model::Uploader up(ctx, file, precision);
  m->patch_embed = up.linear("patch_embed");
  m->head = up.linear("head");
  for (uint32_t i = 0; i < c.num_layers; ++i) {
    const std::string p = "encoder.layers." + std::to_string(i);
    expect(p + ".linear1.weight", {c.dim_feedforward, D});
    m->layers.push_back(up.encoder_layer(p, c.d_model));
  }
  m->final_norm = up.norm("encoder.norm");
  auto pe = sinusoidal_positions(uint32_t(P), c.d_model);
  m->positions = model::upload_floats(ctx, pe, precision, "positions");
  return std::shared_ptr<const Forecaster>(new Forecaster(std::move(m)));
}

std::vector<float> Forecaster::predict(const std::vector<float>& windows) const {
  const Impl& m = *impl_;
  const ForecasterConfig& c = m.config;
  if (windows.empty() || windows.size() % c.window)
    throw Error("forecast: expected a whole number of " + std::to_string(c.window) + "-value windows, got " +
                std::to_string(windows.size()) + " values");
  const uint32_t B = uint32_t(windows.size() / c.window), P = c.patches(), D = c.d_model, rows = B * P;
  // Each window normalised by its own mean and standard deviation (undone on output).
  std::vector<float> norm(windows.size());
  std::vector<double> mean(B), scale(B);
  for (uint32_t b = 0; b < B; ++b) {
    double s = 0, q = 0;
    for (uint32_t i = 0; i < c.window; ++i) s += windows[b * c.window + i];
    mean[b] = s / c.window;
    for (uint32_t i = 0; i < c.window; ++i) q += std::pow(windows[b * c.window + i] - mean[b], 2);
    scale[b] = std::sqrt(q / c.window) + 1e-5;
    for (uint32_t i = 0; i < c.window; ++i) norm[b * c.window + i] = float((windows[b * c.window + i] - mean[b]) / scale[b]);
  }
  for (float v : norm)
    if (!std::isfinite(v)) throw Error("forecast: a window holds a value that is not a finite number");
  Context& ctx = m.ctx;
  Ops ops(ctx, m.dtype);
  const uint32_t e = dtype_bytes(m.dtype);
  Buffer series = model::upload_floats(ctx, norm, m.dtype, "series");
  model::EncoderBuffers buf{ctx.buffer(uint64_t(rows) * D * e, "x"), ctx.buffer(uint64_t(rows) * D * e, "y"),
                            ctx.buffer(uint64_t(rows) * 3 * D * e, "qkv"), ctx.buffer(uint64_t(rows) * D * e, "attn"),
                            ctx.buffer(uint64_t(rows) * c.dim_feedforward * e, "hidden")};
  Buffer out = ctx.buffer(uint64_t(B) * c.horizon * e, "forecast");

  CommandList cl = ctx.command_list();
  // patches[b, p, :] = series[b, p*stride .. p*stride + patch_len): A rows overlap.
  Gemm embed{.M = P, .N = D, .K = c.patch_len, .trans_b = true, .lda = c.stride, .batch = B};
  embed.stride_a = {c.window, 0};
  embed.stride_c = {uint64_t(P) * D, 0};
  embed.stride_r = {0, 0};  // the same positions for every window
  ops.gemm(cl, embed, series.view(), m.patch_embed.weight.view(), buf.x.view(), m.patch_embed.bias.view(),
           m.positions.view());
  const model::EncoderShape shape{.batch = B, .seq_len = P, .d_model = D, .heads = c.nhead, .activation = c.activation,
                                  .norm_first = c.norm_first, .eps = c.layer_norm_eps};
  for (const auto& layer : m.layers) model::record_encoder_layer(ops, cl, layer, shape, buf, std::nullopt);
  ops.layer_norm(cl, {.rows = rows, .cols = D, .eps = c.layer_norm_eps}, buf.x.view(), m.final_norm.gamma.view(),
                 m.final_norm.beta.view(), buf.y.view());
  ops.gemm(cl, {.M = B, .N = c.horizon, .K = P * D, .trans_b = true}, buf.y.view(), m.head.weight.view(), out.view(),
           m.head.bias.view());
  cl.submit();

  std::vector<float> result = model::download_floats(ctx, out, uint64_t(B) * c.horizon, m.dtype);
  for (uint32_t b = 0; b < B; ++b)
    for (uint32_t h = 0; h < c.horizon; ++h) result[b * c.horizon + h] = float(result[b * c.horizon + h] * scale[b] + mean[b]);
  return result;
}

}  // namespace vkf
