// `vkformer forecast`: a series in, forecasts out, scored against a naive last-value
// forecast wherever the series holds the true future.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "commands.hpp"
#include "options.hpp"
#include "vkformer/forecaster.hpp"

namespace vkf::cli {

int forecast(Args& args) {
  auto dir = args.value("--model");
  if (!dir) throw Error("--model DIR is required");
  const std::string series_path =
      args.value("--series").value_or((std::filesystem::path(*dir) / "test_series.txt").string());
  const std::string p = args.value("--precision").value_or("fp32");
  if (p != "fp32" && p != "fp16") throw Error("--precision must be fp32 or fp16");
  ContextOptions co = context_options(args);
  args.rest();
  std::ifstream f(series_path);
  if (!f) throw Error("cannot read the series " + series_path + " (one number per line)");
  std::vector<float> series;
  for (std::string line; std::getline(f, line);) {
    if (line.empty()) continue;
    try {
      series.push_back(std::stof(line));
    } catch (...) {
      throw Error(series_path + ": '" + line + "' is not a number");
    }
  }
  Context ctx(co);
  auto model = Forecaster::load(ctx, *dir, p == "fp16" ? DType::F16 : DType::F32);
  const auto& c = model->config();
  if (series.size() < c.window) throw Error("the series has " + std::to_string(series.size()) + " values; the model reads windows of " + std::to_string(c.window));
  // Every window that has its whole future in the series, plus the final one.
  std::vector<float> windows;
  const size_t scored = series.size() >= c.window + c.horizon ? series.size() - c.window - c.horizon + 1 : 0;
  for (size_t i = 0; i < scored; ++i) windows.insert(windows.end(), series.begin() + long(i), series.begin() + long(i + c.window));
  windows.insert(windows.end(), series.end() - c.window, series.end());
  auto pred = model->predict(windows);
  if (scored) {
    double mae = 0, naive = 0;
    for (size_t i = 0; i < scored; ++i)
      for (uint32_t h = 0; h < c.horizon; ++h) {
        const double truth = series[i + c.window + h];
        mae += std::abs(pred[i * c.horizon + h] - truth);
        naive += std::abs(series[i + c.window - 1] - truth);
      }
    const double n = double(scored) * c.horizon;
    std::printf("forecasting %u days from %u-day windows (%u patches of %u, stride %u) on %s\n", c.horizon, c.window,
                c.patches(), c.patch_len, c.stride, ctx.capabilities().name.c_str());
    std::printf("  mean absolute error over %zu windows: model %.3f, naive last value %.3f (%.1fx better)\n", scored,
                mae / n, naive / n, naive / mae);
  }
  std::printf("  next %u values after the series:", c.horizon);
  for (uint32_t h = 0; h < c.horizon; ++h) std::printf(" %.2f", pred[scored * c.horizon + h]);
  std::printf("\n");
  return 0;
}

}  // namespace vkf::cli
