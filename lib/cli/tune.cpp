// `vkformer tune`: the GEMM and attention tuner (tune_gemm, include/vkformer/gemm_tuning.hpp) on this
// device, printed as it goes: every variant valid here verified against a double
// reference (one that fails is rejected and reported, never used) and timed beside the
// default table's choice; per row class the fastest, when it beats the default, goes to
// the device's tuning file, which gemm() reads from then on.
#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <vector>

#include "commands.hpp"
#include "options.hpp"
#include "vkformer/gemm_tuning.hpp"
#include "vkformer/model.hpp"

namespace vkf::cli {

int tune(const Args& args) {
  const DType dt = precision(args);
  const bool json = args.flag("--json");
  ContextOptions co = context_options(args);
  Context ctx(co);
  if (ctx.cache_dir().empty())
    throw Error("the disk cache is off (--no-cache or VKF_CACHE_DIR=off): a tuning file has nowhere to go");
  const auto& caps = ctx.capabilities();
  GemmTuneOptions o{.precision = dt, .budget_s = args.number("--budget-s", 120)};
  std::string shapes_from = "Transformer-base (d_model 512, FFN 2048)";
  if (const auto model_dir = args.value("--model")) {
    const std::string& dir = *model_dir;
    const auto model = Model::load(ctx, dir, dt);
    const ModelConfig& c = model->config();
    o.shapes = gemm_tuning_shapes(c.d_model, c.dim_feedforward);
    o.attention_heads = c.nhead;
    o.attention_head_dim = c.head_dim();
    o.attention_lengths = attention_tuning_lengths(c.max_position);
    shapes_from = dir + " (d_model " + std::to_string(c.d_model) + ", FFN " + std::to_string(c.dim_feedforward) + ")";
  }
  if (!json) o.progress = [](const std::string& line) { std::printf("%s\n", line.c_str()); };
  auto say = [&](const char* fmt, auto... a) {
    if (!json) std::printf(fmt, a...);
  };
  say("vkformer %s tune on %s (%s), %s storage, budget %.0f s, products of %s\n", version(), caps.name.c_str(),
      caps.driver_info.c_str(), to_string(dt), o.budget_s, shapes_from.c_str());
  // Designs this device cannot run are named, grouped by the reason (a cooperative-matrix
  // variant on a device without them, tiles beyond its limits).
  const size_t designs = gemm_tile_designs().size();
  std::vector<std::pair<std::string, std::string>> refused;  // (reason, the designs it refuses), in order
  for (const auto& not_valid : gemm_designs_not_valid(caps, dt)) {
    const GemmTiles& t = not_valid.first;
    const std::string& why = not_valid.second;  // (not a structured binding: clang 14 cannot capture one)
    auto it = std::find_if(refused.begin(), refused.end(), [&](const auto& r) { return r.first == why; });
    if (it == refused.end()) refused.emplace_back(why, t.name());
    else it->second += ", " + t.name();
  }
  say("%zu of %zu designs are valid here\n", gemm_tile_candidates(caps, dt).size(), designs);
  for (const auto& [why, names] : refused) say("  not valid here: %s\n    (%s)\n", names.c_str(), why.c_str());

  const GemmTuneReport r = tune_gemm(ctx, o);

  nlohmann::json report = {{"device", caps.name}, {"precision", to_string(dt)}, {"classes", nlohmann::json::array()},
                           {"not_valid", nlohmann::json::array()}, {"file", r.file}, {"seconds", r.seconds}};
  for (const auto& [t, why] : r.not_valid) report["not_valid"].push_back({{"variant", t.name()}, {"why", why}});
  for (const auto& cls : r.classes) {
    nlohmann::json entry = {{"class", gemm_row_class_name(cls.row_class)},
                            {"m", cls.shape.M},
                            {"n", cls.shape.N},
                            {"k", cls.shape.K},
                            {"default", cls.fallback.name()},
                            {"default_us", cls.default_seconds * 1e6},
                            {"chosen", cls.chosen.name()},
                            {"speedup", cls.speedup},
                            {"out_of_time", cls.out_of_time},
                            {"candidates", nlohmann::json::array()}};
    for (const auto& c : cls.candidates) {
      nlohmann::json row = {{"variant", c.tiles.name()}, {"verified", c.verified}, {"error", c.error}};
      if (c.verified) row["us"] = c.seconds * 1e6;
      entry["candidates"].push_back(row);
    }
    if (cls.out_of_time)
      say("  (%s: its share of the budget was spent before every candidate was tried)\n",
          gemm_row_class_name(cls.row_class).c_str());
    report["classes"].push_back(entry);
  }
  report["attention"] = nlohmann::json::array();
  for (const auto& cls : r.attention) {
    nlohmann::json entry = {{"class", attention_length_class_name(cls.length_class)},
                            {"q_len", cls.q_len},
                            {"default", attention_kernel_name(cls.fallback)},
                            {"default_us", cls.default_seconds * 1e6},
                            {"chosen", attention_kernel_name(cls.chosen)},
                            {"speedup", cls.speedup},
                            {"out_of_time", cls.out_of_time},
                            {"candidates", nlohmann::json::array()}};
    for (const auto& c : cls.candidates) {
      nlohmann::json row = {{"variant", attention_kernel_name(c.kernel)}, {"verified", c.verified}, {"error", c.error}};
      if (c.verified) row["us"] = c.seconds * 1e6;
      entry["candidates"].push_back(row);
    }
    report["attention"].push_back(entry);
  }
  if (json) std::printf("%s\n", report.dump().c_str());
  else say("\nwrote %s in %.0f s (read by every later run on this device and precision)\n", r.file.c_str(), r.seconds);
  return 0;
}

}  // namespace vkf::cli
