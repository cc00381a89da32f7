// `vkformer forecast`: a series in, forecasts out, scored against a naive last-value
// forecast wherever the series holds the true future.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "options.hpp"
#include "files.hpp"
#include "vkformer/forecaster.hpp"

namespace vkf::cli {

int forecast(const Args& args) {
  const std::string dir = model_dir(args, ModelTask::Forecaster);
  const std::string series_path = args.value("--series").value_or((std::filesystem::path(dir) / "test_series.txt").string());
  const DType dtype = precision(args);
  const bool json = args.flag("--json");
  ContextOptions co = context_options(args);
  require_regular_file(series_path, "series");
  std::ifstream f(series_path);
  if (!f) throw Error("cannot read the series " + series_path + " (one number per line)");
  std::vector<float> series;
  size_t line_no = 0;
  for (std::string line; std::getline(f, line);) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    series.push_back(float(parse_number(line, series_path + " line " + std::to_string(line_no), -3.4e38, 3.4e38)));
  }
  Context ctx(co);
  auto model = Forecaster::load(ctx, dir, dtype);
  const auto& c = model->config();
  if (series.size() < c.window) throw Error("the series has " + std::to_string(series.size()) + " values; the model reads windows of " + std::to_string(c.window));
  // Every window that has its whole future in the series, plus the final one.
  std::vector<float> windows;
  const size_t scored = series.size() >= c.window + c.horizon ? series.size() - c.window - c.horizon + 1 : 0;
  for (size_t i = 0; i < scored; ++i) windows.insert(windows.end(), series.begin() + long(i), series.begin() + long(i + c.window));
  windows.insert(windows.end(), series.end() - c.window, series.end());
  auto pred = model->predict(windows);
  double mae = 0, naive = 0;
  for (size_t i = 0; i < scored; ++i)
    for (uint32_t h = 0; h < c.horizon; ++h) {
      const double truth = series[i + c.window + h];
      mae += std::abs(pred[i * c.horizon + h] - truth);
      naive += std::abs(series[i + c.window - 1] - truth);
    }
  const double n = double(scored) * c.horizon;
  const std::vector<float> next(pred.begin() + long(scored * c.horizon), pred.begin() + long((scored + 1) * c.horizon));
  if (json) {
    nlohmann::json j = {{"device", ctx.capabilities().name}, {"window", c.window}, {"horizon", c.horizon},
                        {"scored_windows", scored}, {"next", next}};
    j["mae_model"] = scored ? nlohmann::json(mae / n) : nlohmann::json(nullptr);
    j["mae_naive"] = scored ? nlohmann::json(naive / n) : nlohmann::json(nullptr);
    std::printf("%s\n", j.dump().c_str());
    return 0;
  }
  if (scored) {
    std::printf("forecasting %u days from %u-day windows (%u patches of %u, stride %u) on %s\n", c.horizon, c.window,
                c.patches(), c.patch_len, c.stride, ctx.capabilities().name.c_str());
    // Which is better, said the right way round (a model worse than the naive forecast is news).
    char verdict[64] = "model and naive equal";
    if (mae < naive && mae > 0) std::snprintf(verdict, sizeof verdict, "model %.1fx better", naive / mae);
    else if (mae < naive) std::snprintf(verdict, sizeof verdict, "model exact");
    else if (mae > naive && naive > 0) std::snprintf(verdict, sizeof verdict, "model %.1fx worse", mae / naive);
    else if (mae > naive) std::snprintf(verdict, sizeof verdict, "model worse; naive exact");
    std::printf("  mean absolute error over %zu windows: model %.3f, naive last value %.3f (%s)\n", scored, mae / n,
                naive / n, verdict);
  }
  std::printf("  next %u values after the series:", c.horizon);
  for (float v : next) std::printf(" %.2f", v);
  std::printf("\n");
  return 0;
}

}  // namespace vkf::cli
