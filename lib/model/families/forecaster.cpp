// The patch forecaster: patch embedding as one GEMM whose A rows overlap (lda = stride
// over the series), positions added in its epilogue (a residual broadcast over the
// batch), the shared encoder layers, and a linear head over the flattened patches.
#include "vkformer/forecaster.hpp"

#include <cmath>
#include <filesystem>

#include "config_reader.hpp"
#include "encoder_graph.hpp"
#include "family.hpp"
#include "vkformer/model.hpp"
#include "vkformer/tensor_io.hpp"

namespace vkf {

namespace model {
// In the registry so that every command can tell a forecaster from a model that
// generates; Forecaster::load reads it, not Model::load.
const Family kForecaster{"torch-patch-forecaster", false, ModelTask::Forecaster, nullptr, nullptr, nullptr, nullptr,
                           {}};
}  // namespace model

ForecasterConfig ForecasterConfig::from_file(const std::string& path) {
  const model::ConfigReader r(path);
  const std::string arch = r.string("architecture");
  if (arch != "torch-patch-forecaster")
    r.fail("architecture must be \"torch-patch-forecaster\", got '" + arch + "'");
  ForecasterConfig c;
  c.window = r.count("window", 1);
  c.patch_len = r.count("patch_len", 1);
  c.stride = r.count("stride", 1);
  c.horizon = r.count("horizon", 1);
  model::set_stack(c, r.stack());
  c.num_layers = r.count("num_layers", 0);
  if (c.patch_len > c.window) r.fail("patch_len is longer than the window");
  if (uint64_t(c.patches()) * c.d_model > (1u << 24))
    r.fail("patches x d_model is too large for the head (" + std::to_string(uint64_t(c.patches()) * c.d_model) + ")");
  return c;
}

struct Forecaster::Impl {
  Context& ctx;
  ForecasterConfig config;
  DType dtype;
  model::Linear patch_embed, head;     // [D, patch_len], [horizon, patches * D]
  Buffer positions;                    // [patches, D] in the model's precision
  std::vector<model::EncoderLayer> layers;
  model::Norm final_norm;
};

Forecaster::Forecaster(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Forecaster::~Forecaster() = default;
const ForecasterConfig& Forecaster::config() const { return impl_->config; }

std::shared_ptr<const Forecaster> Forecaster::load(Context& ctx, const std::string& dir, DType precision) {
  namespace fs = std::filesystem;
  const ModelFiles files(dir);
  model_architecture(files);  // a clear error for a missing directory, a file, no config.json
  auto c = ForecasterConfig::from_file((fs::path(dir) / "config.json").string());
  const uint32_t D = c.d_model, P = c.patches();
  model::check_runs_here(ctx, files, D / c.nhead, precision);
  auto m = std::make_unique<Impl>(Impl{ctx, c, precision, {}, {}, {}, {}, {}});
  model::Checkpoint t(ctx, files, "model.safetensors", precision, "torch-patch-forecaster");
  const std::string layers = "encoder.layers";
  t.layers(layers, c.num_layers, "num_layers");
  t.linear(m->patch_embed, "patch_embed", D, c.patch_len);
  m->layers.resize(c.num_layers);
  for (uint32_t i = 0; i < c.num_layers; ++i)
    t.encoder_layer(m->layers[i], layers + "." + std::to_string(i), D, c.dim_feedforward);
  t.norm(m->final_norm, "encoder.norm", D);
  t.linear(m->head, "head", c.horizon, P * D);
  t.then([&m = *m] {
    const auto pe = sinusoidal_positions(m.config.patches(), m.config.d_model);
    m.positions = upload_floats(m.ctx, pe, m.dtype, "positions");
  });
  t.load();  // names and shapes first: nothing is uploaded for a model that does not match
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
  Buffer series = upload_floats(ctx, norm, m.dtype, "series");
  // The encoder graph: the patches, the shared encoder layers (each LayerNorm folded into
  // the GEMMs that read it, unless VKF_FOLD_NORMS=0), the final norm (post-norm, the last
  // layer's with it); then the head over each window's flattened patches.
  const model::EncoderStack stack{
      .settings = {.d_model = D, .heads = c.nhead, .head_dim = D / c.nhead, .dim_feedforward = c.dim_feedforward,
                   .activation = c.activation, .norm_first = c.norm_first, .eps = c.layer_norm_eps},
      .layers = &m.layers,
      .final_norm = &m.final_norm};
  model::EncoderGraph encoder(ctx, ops, stack, [&](CommandList& cl, uint32_t n) {
    return model::LayerRecorder{.ops = ops, .cl = cl, .rows = n, .d_model = D, .norm_first = c.norm_first,
                                .eps = c.layer_norm_eps, .activation = c.activation};
  });
  model::EncoderBuffers buf{ctx.buffer(uint64_t(rows) * D * e, "x"),          // [B*P, D]
                                  ctx.buffer(uint64_t(rows) * D * e, "y"),          // [B*P, D]
                                  ctx.buffer(uint64_t(rows) * 3 * D * e, "qkv"),    // [B*P, 3D]
                                  ctx.buffer(uint64_t(rows) * D * e, "attn"),       // [B*P, D]
                                  ctx.buffer(uint64_t(rows) * c.dim_feedforward * e, "hidden"),  // [B*P, FFN]
                                  {}};
  // The folded layers' row statistics, where the device's GEMMs write them: [B*P, parts, 4] fp32.
  if (const uint32_t parts = encoder.row_stats_parts(rows))
    for (Buffer& b : buf.stats) b = ctx.buffer(uint64_t(rows) * parts * 16, "row_stats");
  Buffer last = ctx.buffer(uint64_t(rows) * D * e, "last_hidden");   // [B*P, D]: the encoder's last hidden state
  Buffer out = ctx.buffer(uint64_t(B) * c.horizon * e, "forecast");  // [B, horizon]

  // patches[b, p, :] = series[b, p*stride .. p*stride + patch_len): A rows overlap.
  const model::EncoderInput input{
      .batch = B, .seq_len = P,
      .rows = model::RowInput{.series = series.view(), .width = c.patch_len, .stride = c.stride, .item_stride = c.window,
                              .projection = &m.patch_embed, .positions = m.positions.view()}};
  encoder.run(input, buf, last.view(), [&](CommandList& cl, const BufferView& y) {
    ops.gemm(cl, {.M = B, .N = c.horizon, .K = P * D, .trans_b = true},
             {.a = y, .b = m.head.weight.view(), .c = out.view(), .bias = m.head.bias.view()});  // [B, horizon]
  });

  std::vector<float> result = download_floats(ctx, out, uint64_t(B) * c.horizon, m.dtype);
  for (uint32_t b = 0; b < B; ++b)
    for (uint32_t h = 0; h < c.horizon; ++h) result[b * c.horizon + h] = float(result[b * c.horizon + h] * scale[b] + mean[b]);
  return result;
}

}  // namespace vkf
