// `vkformer tune`: the tiled GEMM's candidates on this device, each verified against a
// double-precision reference (one that fails is rejected and reported, never used) and
// timed beside the default table's choice; per row class the fastest, when it beats the
// default, goes to the device's tuning file, which gemm() reads from then on.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <vector>

#include "bench.hpp"
#include "commands.hpp"
#include "options.hpp"
#include "vkformer/gemm_tuning.hpp"
#include "vkformer/tensor_io.hpp"

namespace vkf::cli {

namespace {

using clock_type = std::chrono::steady_clock;

// Seconds per product of `g` (many products per submit, so the submit's cost is shared).
double time_tiles(Context& ctx, Ops& ops, const Gemm& g, const Buffer& a, const Buffer& b, const Buffer& c,
                  double min_seconds) {
  const uint32_t reps = uint32_t(std::clamp(2e8 / (2.0 * g.M * g.N * g.K), 1.0, 50.0));
  return time_gpu(ctx, reps, [&](CommandList& cl) { ops.gemm(cl, g, a.view(), b.view(), c.view()); }, min_seconds);
}

}  // namespace

int tune(const Args& args) {
  const DType dt = precision(args);
  const double budget = args.number("--budget-s", 120);
  const bool json = args.flag("--json");
  ContextOptions co = context_options(args);
  Context ctx(co);
  if (ctx.cache_dir().empty()) throw Error("the disk cache is off (--no-cache or VKF_CACHE_DIR=off): a tuning file has nowhere to go");
  Ops ops(ctx, dt);
  const auto& caps = ctx.capabilities();
  const auto started = clock_type::now();
  auto left = [&] { return budget - std::chrono::duration<double>(clock_type::now() - started).count(); };
  auto say = [&](const char* fmt, auto... a) {
    if (!json) std::printf(fmt, a...);
  };
  say("vkformer %s tune on %s (%s), %s storage, budget %.0f s\n", version(), caps.name.c_str(), caps.driver_info.c_str(),
      to_string(dt), budget);

  // One Transformer-base product per row class, as the runtime meets them: a 24-token
  // source by the FFN's 2048x512, 256 rows by it, and 1024 rows by a 512x512 projection.
  const Gemm shapes[] = {{.M = 24, .N = 2048, .K = 512, .trans_b = true},
                         {.M = 256, .N = 2048, .K = 512, .trans_b = true},
                         {.M = 1024, .N = 512, .K = 512, .trans_b = true}};
  const auto candidates = gemm_tile_candidates(caps, dt);
  // Designs this device cannot run are named once, with the reason (a cooperative-matrix
  // variant on a device without them, tiles beyond its limits).
  nlohmann::json not_valid = nlohmann::json::array();
  std::vector<std::pair<std::string, std::string>> refused;  // (reason, the designs it refuses), in order
  for (const GemmTiles& t : gemm_tile_designs())
    if (const std::string why = gemm_tiles_problem(caps, t, dt); !why.empty()) {
      not_valid.push_back({{"variant", t.name()}, {"why", why}});
      auto it = std::find_if(refused.begin(), refused.end(), [&](const auto& r) { return r.first == why; });
      if (it == refused.end()) refused.emplace_back(why, t.name());
      else it->second += ", " + t.name();
    }
  say("%zu of %zu designs are valid here\n", candidates.size(), gemm_tile_designs().size());
  for (const auto& [why, names] : refused) say("  not valid here: %s\n    (%s)\n", names.c_str(), why.c_str());
  GemmTuning tuning;
  nlohmann::json report = {{"device", caps.name}, {"precision", to_string(dt)}, {"classes", nlohmann::json::array()},
                            {"not_valid", not_valid}};
  uint64_t seed = 1;
  for (const Gemm& shape : shapes) {
    const uint32_t row_class = gemm_row_class(shape.M);
    const double share = std::max(1.0, left() / double(std::size(shapes) - row_class));  // this class's time
    const auto class_started = clock_type::now();
    auto class_left = [&] { return share - std::chrono::duration<double>(clock_type::now() - class_started).count(); };
    std::vector<float> fill(uint64_t(std::max(shape.M, shape.N)) * shape.K);
    for (size_t i = 0; i < fill.size(); ++i) fill[i] = float((i * 7919) % 1000) / 1000.0f - 0.5f;
    Buffer a = upload_floats(ctx, std::span<const float>(fill).first(uint64_t(shape.M) * shape.K), dt, "A");
    Buffer b = upload_floats(ctx, std::span<const float>(fill).first(uint64_t(shape.N) * shape.K), dt, "B");
    Buffer c = ctx.buffer(uint64_t(shape.M) * shape.N * dtype_bytes(dt), "C");
    const GemmTiles fallback = ops.default_gemm_tiles(shape);  // the default table's choice, tuned or not
    const double seconds = 0.15;
    Gemm g = shape;
    g.tiles = fallback;
    double base = time_tiles(ctx, ops, g, a, b, c, seconds);
    say("\n%s (timed at %ux%ux%u): default %s, %.1f us\n", gemm_row_class_name(row_class).c_str(), shape.M, shape.N, shape.K,
        fallback.name().c_str(), base * 1e6);
    nlohmann::json entry = {{"class", gemm_row_class_name(row_class)}, {"m", shape.M}, {"n", shape.N}, {"k", shape.K},
                            {"default", fallback.name()}, {"default_us", base * 1e6}, {"candidates", nlohmann::json::array()}};
    GemmTiles best = fallback;
    double best_time = base;
    for (const GemmTiles& t : candidates) {
      if (class_left() <= 0) {
        say("  (this class's share of the budget is spent: the remaining candidates were not tried)\n");
        break;
      }
      // Verified first, on awkward shapes of the class (K a multiple of 4 and not, for the
      // kernel's vec4 and scalar loads), against the double reference.
      const uint32_t m = shape.M - 1;
      const GemmCheck v4 = check_gemm_tiles(ctx, dt, m, 131, 260, t, seed++);
      const GemmCheck v1 = v4.ok ? check_gemm_tiles(ctx, dt, m, 131, 259, t, seed++) : v4;
      nlohmann::json row = {{"variant", t.name()}, {"verified", v4.ok && v1.ok}, {"error", std::max(v4.error, v1.error)}};
      if (!(v4.ok && v1.ok)) {
        say("  %-28s REJECTED: error %.3g of sum |a b| (the bound is 1e-5)\n", t.name().c_str(), std::max(v4.error, v1.error));
        entry["candidates"].push_back(row);
        continue;
      }
      g.tiles = t;
      const double s = time_tiles(ctx, ops, g, a, b, c, seconds);
      row["us"] = s * 1e6;
      say("  %-28s verified (error %.2g), %10.1f us  %5.2fx\n", t.name().c_str(), row["error"].get<double>(), s * 1e6,
          base / s);
      entry["candidates"].push_back(row);
      if (s < best_time) best = t, best_time = s;
    }
    // A winner must beat the default clearly, and again when the two are timed in turn
    // (three rounds, medians): one lucky timing on a busy machine is not a reason to change.
    if (!(best == fallback) && best_time < 0.95 * base) {
      std::vector<double> mine, theirs;
      for (int round = 0; round < 3; ++round) {
        g.tiles = fallback;
        theirs.push_back(time_tiles(ctx, ops, g, a, b, c, seconds));
        g.tiles = best;
        mine.push_back(time_tiles(ctx, ops, g, a, b, c, seconds));
      }
      std::sort(mine.begin(), mine.end());
      std::sort(theirs.begin(), theirs.end());
      base = theirs[1], best_time = mine[1];
      say("  confirming %s: %.1f us against the default's %.1f us\n", best.name().c_str(), best_time * 1e6, base * 1e6);
    }
    if (!(best == fallback) && best_time < 0.95 * base) {
      tuning.tiles[row_class] = best;
      say("  -> %s, %.2fx the default\n", best.name().c_str(), base / best_time);
    } else {
      tuning.tiles[row_class] = std::nullopt;  // the default table's choice stands
      say("  -> the default table's choice stands\n");
    }
    entry["chosen"] = best_time < 0.95 * base ? best.name() : fallback.name();
    entry["speedup"] = best_time < 0.95 * base ? base / best_time : 1.0;
    report["classes"].push_back(entry);
  }
  save_gemm_tuning(ctx, dt, tuning);
  report["file"] = gemm_tuning_path(ctx, dt);
  if (json) std::printf("%s\n", report.dump().c_str());
  else std::printf("\nwrote %s (read by every later run on this device and precision)\n", gemm_tuning_path(ctx, dt).c_str());
  return 0;
}

}  // namespace vkf::cli
