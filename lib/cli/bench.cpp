// `vkformer bench`: kernel and model benchmarks on every Vulkan device (or the one
// chosen), a table on the terminal, a JSON report and an SVG chart.
#include <algorithm>
#include <cstdlib>
#include <chrono>
#include <functional>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>

#include "bench.hpp"
#include "bounded_json.hpp"
#include "vkformer/encoder.hpp"
#include "commands.hpp"
#include "sample_models.hpp"
#include "options.hpp"
#include "files.hpp"
#include "vkformer/model.hpp"

namespace vkf::cli {

namespace fs = std::filesystem;

namespace {

// The median of `rounds` timings of f (each after the warm-up the caller ran), as
// bench ops takes them: one slow round on a shared machine does not move it.
double median_seconds(int rounds, const std::function<void()>& f) {
  std::vector<double> t;
  for (int r = 0; r < rounds; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

// The decode step's GEMM time and its whole time, in ms, from a profile report's last
// decoder step (CommandList::profile_report: "name  workgroups  microseconds" lines).
std::pair<double, double> step_gemm_ms(const std::string& report) {
  const size_t at = report.find("last decoder step:");
  if (at == std::string::npos) return {0, 0};
  double gemm = 0, total = 0;
  size_t line = report.find('\n', at);
  while (line != std::string::npos && line + 1 < report.size()) {
    const size_t end = report.find('\n', line + 1);
    const std::string l = report.substr(line + 1, end == std::string::npos ? std::string::npos : end - line - 1);
    line = end;
    const size_t last = l.find_last_of(' ');
    if (last == std::string::npos) continue;
    const double us = std::atof(l.c_str() + last + 1);
    if (l.rfind("total", 0) == 0) {
      total = us;
      break;
    }
    if (l.rfind("gemm", 0) == 0) gemm += us;
  }
  return {gemm / 1e3, total / 1e3};
}

// How one `--weights` entry stores the model: fp32 or fp16 (weights and activations), or
// a block type (activations in `dtype`).
LoadOptions storage_setting(const std::string& name, DType dtype) {
  LoadOptions o{.precision = dtype};
  if (name == "fp32" || name == "fp16") o.precision = name == "fp16" ? DType::F16 : DType::F32;
  else if (!set_weights(o, name))
    throw Error("--weights takes fp32, fp16, block types and mixes (" + weights_names() + "), not '" + name + "'");
  return o;
}

}  // namespace

// `bench model --weights fp16,q8_0,q4_k_m`: the same model in each storage, loaded side by
// side, greedy decoding at batch 1 in alternating rounds (medians): decode tokens/s, the
// weights' device bytes, one profiled step's GEMM time and its share of the step, and (a
// decoder-only model) the prompt pass's tokens/s on a prompt of 128 tokens.
nlohmann::json bench_weights(Context& ctx, const std::string& dir, DType dtype, const std::vector<std::string>& settings,
                             bool quick, bool print, int rounds_given) {
  struct Setting {
    std::string name;
    std::shared_ptr<const Model> model;
    std::vector<double> tps, prompt_tps;
  };
  std::vector<Setting> runs;
  for (const auto& name : settings) {
    LoadOptions o = storage_setting(name, dtype);
    o.progress = terminal_progress("loading " + name);
    runs.push_back({name, Model::load(ctx, dir, o), {}});
  }
  const ModelConfig& c = runs.front().model->config();
  const int rounds = rounds_given > 0 ? rounds_given : quick ? 1 : 5;
  const uint32_t tokens = std::min<uint32_t>(quick ? 8 : 64, c.max_position - 9);
  std::vector<std::vector<uint32_t>> inputs = {{}};
  for (uint32_t i = 0; i < 8; ++i) inputs[0].push_back((4 + i * 7) % (c.kind == ModelKind::DecoderOnly ? c.tgt_vocab_size : c.src_vocab_size));
  const GenerateOptions g{.max_new_tokens = tokens, .stop_at_eos = false};
  // The prompt pass: a prompt of 128 tokens (fewer where the model's positions end sooner).
  const uint32_t prompt_len = std::min<uint32_t>(quick ? 16 : 128, c.max_position - 2);
  std::vector<std::vector<uint32_t>> prompt = {{}};
  for (uint32_t i = 0; i < prompt_len; ++i) prompt[0].push_back((4 + i * 7) % c.tgt_vocab_size);
  if (print)
    std::printf("%-10s %14s %16s %9s %10s %12s %10s%s\n", "weights", "weight bytes", "decode tokens/s", "ratio",
                "per round", "GEMM ms/step", "of step",
                c.kind == ModelKind::DecoderOnly ? "  prompt tokens/s    ratio per round" : "");
  nlohmann::json out = nlohmann::json::array();
  std::vector<std::pair<double, double>> gemm(runs.size());
  for (size_t i = 0; i < runs.size(); ++i) {  // warm-up, and one profiled step
    Session s(runs[i].model);
    s.generate(inputs, {.max_new_tokens = 4, .stop_at_eos = false});
    s.set_profile(true);
    s.generate(inputs, {.max_new_tokens = 2, .stop_at_eos = false});
    gemm[i] = step_gemm_ms(s.profile_report());
  }
  for (int r = 0; r < rounds; ++r)
    for (size_t k = 0; k < runs.size(); ++k) {
      Setting& run = runs[r % 2 ? runs.size() - 1 - k : k];
      Session s(run.model);
      s.generate(inputs, g);
      run.tps.push_back(s.last_stats().decode_tokens_per_second());
      if (c.kind != ModelKind::DecoderOnly) continue;
      s.generate(prompt, {.max_new_tokens = 1, .stop_at_eos = false});
      run.prompt_tps.push_back(s.last_stats().prompt_tokens_per_second());
    }
  auto median_of = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0.0 : v[v.size() / 2];
  };
  // The median of each round's ratio to the first storage's in that round: the host's
  // slow and fast phases, which last longer than a round, cancel within a round.
  auto round_ratio = [&](const std::vector<double>& v, const std::vector<double>& base) {
    std::vector<double> r;
    for (size_t k = 0; k < v.size() && k < base.size(); ++k)
      if (base[k] > 0) r.push_back(v[k] / base[k]);
    return median_of(r);
  };
  double first = 0, first_prompt = 0;
  for (size_t i = 0; i < runs.size(); ++i) {
    const double median = median_of(runs[i].tps), prompt_median = median_of(runs[i].prompt_tps);
    const double per_round = round_ratio(runs[i].tps, runs[0].tps);
    const double prompt_per_round = round_ratio(runs[i].prompt_tps, runs[0].prompt_tps);
    if (i == 0) first = median, first_prompt = prompt_median;
    uint64_t bytes = 0;
    for (const auto& [type, b] : runs[i].model->checkpoint().weight_bytes) bytes += b;
    out.push_back({{"weights", runs[i].name},
                   {"weight_bytes", runs[i].model->checkpoint().weight_bytes},
                   {"decode_tokens_per_second", median},
                   {"rounds", runs[i].tps},
                   {"ratio", first > 0 ? median / first : 0},
                   {"round_ratio", per_round},
                   {"step_gemm_ms", gemm[i].first},
                   {"step_ms", gemm[i].second}});
    if (c.kind == ModelKind::DecoderOnly) {
      out.back()["prompt_tokens"] = prompt_len;
      out.back()["prompt_tokens_per_second"] = prompt_median;
      out.back()["prompt_rounds"] = runs[i].prompt_tps;
      out.back()["prompt_ratio"] = first_prompt > 0 ? prompt_median / first_prompt : 0;
      out.back()["prompt_round_ratio"] = prompt_per_round;
    }
    if (print) {
      std::printf("%-10s %14llu %16.1f %8.2fx %9.2fx %12.2f %9.0f%%", runs[i].name.c_str(), (unsigned long long)bytes,
                  median, first > 0 ? median / first : 0, per_round, gemm[i].first,
                  gemm[i].second > 0 ? 100 * gemm[i].first / gemm[i].second : 0);
      if (c.kind == ModelKind::DecoderOnly)
        std::printf(" %17.1f %7.2fx %9.2fx", prompt_median, first_prompt > 0 ? prompt_median / first_prompt : 0,
                    prompt_per_round);
      std::printf("\n");
    }
  }
  if (print)
    std::printf("(batch 1, %u tokens after a prompt of 8, median of %d alternating rounds; per round: the median of "
                "each round's ratio; GEMM ms/step: one profiled step, its share of that step's GPU time%s)\n",
                tokens, rounds, c.kind == ModelKind::DecoderOnly ? ("; a prompt pass of " + std::to_string(prompt_len) + " tokens").c_str() : "");
  return out;
}

// An encoder-only model: batches of sequences through the encoder (its heads included),
// as embedding or classifying a corpus runs it: sequences/s at batch 1 and 32 of 128
// tokens (or its positions, if fewer).
void bench_encoder(const std::shared_ptr<const Model>& model, bool quick, int rounds, bool print, nlohmann::json& out) {
  const auto& c = model->config();
  Encoder encoder(model);
  const uint32_t len = std::min<uint32_t>(quick ? 16 : 128, c.max_position);
  for (uint32_t batch : {1u, quick ? 4u : 32u}) {
    std::vector<std::vector<uint32_t>> ids(batch);
    for (uint32_t b = 0; b < batch; ++b)
      for (uint32_t i = 0; i < len; ++i) ids[b].push_back((5 + b * 31 + i * 7) % c.src_vocab_size);
    double s = 0;
    try {
      encoder.encode_batch(ids);  // warm-up: pipelines compiled, buffers made
      s = median_seconds(rounds, [&] { encoder.encode_batch(ids); });
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::InvalidInput && e.kind() != ErrorKind::OutOfMemory) throw;
      out["encode"].push_back({{"batch", batch}, {"skipped", e.what()}});
      if (print) std::printf("%-24s %12s (batch %u: %s)\n", "encode", "skipped", batch, e.what());
      continue;
    }
    out["encode"].push_back({{"batch", batch}, {"tokens", len}, {"seconds", s}, {"sequences_per_second", batch / s},
                             {"tokens_per_second", batch * len / s}});
    if (print)
      std::printf("%-24s %12.1f sequences/s (batch %u x %u tokens; %.0f tokens/s)\n", "encode", batch / s, batch, len,
                  batch * len / s);
  }
}

nlohmann::json bench_model(Context& ctx, const std::string& dir, DType dtype, bool quick, bool print, int rounds_given) {
  auto model = Model::load(ctx, dir, dtype);
  const auto& c = model->config();
  const int rounds = rounds_given > 0 ? rounds_given : quick ? 1 : 3;
  const auto& caps = ctx.capabilities();
  nlohmann::json out = {{"model", dir},
                        {"architecture", c.architecture},
                        {"d_model", c.d_model},
                        {"layers", c.num_encoder_layers + c.num_decoder_layers},
                        {"parameters", model->checkpoint().parameters},
                        {"rounds", rounds}};
  if (print)
    std::printf("vkformer %s bench model %s (%s, %.1f M parameters) on %s (%s), %s storage, median of %d round(s)\n",
                version(), dir.c_str(), c.architecture.c_str(), model->checkpoint().parameters / 1e6, caps.name.c_str(),
                caps.driver_info.c_str(), dtype == DType::F16 ? "fp16" : "fp32", rounds);
  // A batch this device cannot hold (a buffer past what one binding takes, its memory):
  // that row is skipped, with the reason, and the others still run.
  if (c.kind == ModelKind::EncoderOnly) {
    bench_encoder(model, quick, rounds, print, out);
    return out;
  }
  Session session(model);
  auto skipped = [&](const Error& e, const char* what, uint32_t batch) {
    if (e.kind() != ErrorKind::InvalidInput && e.kind() != ErrorKind::OutOfMemory) throw;  // as it was thrown
    out[what].push_back({{"batch", batch}, {"skipped", e.what()}});
    if (print) std::printf("%-24s %12s (batch %u: %s)\n", what, "skipped", batch, e.what());
  };
  if (c.kind == ModelKind::DecoderOnly) {
    // A decoder-only model: prompt processing (a prompt of 128 and of 512 tokens, within
    // its positions, then one token) and greedy decoding at batch 1, 4 and 16 after
    // prompts of 5 to 8 tokens (one batch, left-padded to the longest).
    auto prompt = [&](uint32_t n) {
      std::vector<uint32_t> p;
      for (uint32_t i = 0; i < n; ++i) p.push_back((4 + i * 7) % c.tgt_vocab_size);
      return p;
    };
    session.generate({prompt(8)}, {.max_new_tokens = 2, .stop_at_eos = false});  // warm-up: pipelines compiled
    for (uint32_t n : {quick ? 16u : 128u, quick ? 32u : 512u}) {
      if (n >= c.max_position) continue;
      const auto p = prompt(n);
      session.generate({p}, {.max_new_tokens = 1, .stop_at_eos = false});  // warm-up: this size's pipelines
      const double s = median_seconds(rounds, [&] { session.generate({p}, {.max_new_tokens = 1, .stop_at_eos = false}); });
      out["prompt"].push_back({{"tokens", n}, {"seconds", s}, {"tokens_per_second", n / s}});
      if (print) std::printf("%-24s %12.1f tokens/s (%u tokens)\n", "prompt processing", n / s, n);
    }
    const uint32_t tokens = std::min<uint32_t>(quick ? 8 : 64, c.max_position - 8);
    for (uint32_t batch : {1u, 4u, 16u}) {
      std::vector<std::vector<uint32_t>> prompts;
      for (uint32_t b = 0; b < batch; ++b) prompts.push_back(prompt(5 + b % 4));
      size_t n = 0;
      double s = 0;
      try {
        if (batch > 1) session.generate(prompts, {.max_new_tokens = 2, .stop_at_eos = false});  // warm-up at this batch
        s = median_seconds(rounds, [&] {
          n = 0;
          for (const auto& v : session.generate(prompts, {.max_new_tokens = tokens, .stop_at_eos = false})) n += v.size();
        });
      } catch (const Error& e) {
        skipped(e, "greedy", batch);
        continue;
      }
      out["greedy"].push_back({{"batch", batch}, {"tokens", n}, {"seconds", s}, {"tokens_per_second", n / s}});
      if (print) std::printf("%-24s %12.1f tokens/s (batch %u, %zu tokens)\n", "greedy decoding", n / s, batch, n);
    }
    return out;
  }
  std::vector<uint32_t> src;
  for (uint32_t i = 0; i < 20; ++i) src.push_back(4 + (i * 7) % (c.src_vocab_size - 4));
  const uint32_t tokens = quick ? 8 : 24;
  for (uint32_t batch : {1u, quick ? 4u : 32u}) {
    std::vector<std::vector<uint32_t>> sources(batch, src);
    GenerateOptions o{.max_new_tokens = tokens, .stop_at_eos = false};
    size_t n = 0;
    double s = 0;
    try {
      session.generate(sources, {.max_new_tokens = 2});  // warm-up: pipelines compiled
      s = median_seconds(rounds, [&] {
        n = 0;
        for (auto& v : session.generate(sources, o)) n += v.size();
      });
    } catch (const Error& e) {
      skipped(e, "greedy", batch);
      continue;
    }
    out["greedy"].push_back({{"batch", batch}, {"tokens", n}, {"seconds", s}, {"tokens_per_second", n / s}});
    if (print) std::printf("%-24s %12.1f tokens/s (batch %u, %zu tokens)\n", "greedy decoding", n / s, batch, n);
  }
  return out;
}

int bench(const Args& args) {
  const bool quick = args.flag("--quick");
  const uint32_t max_size = args.count("--max-size", 0);
  const int rounds = int(args.count("--rounds", 0));  // 0: each benchmark's default
  auto json_path = args.value("--json-out");
  const bool json_stdout = args.flag("--json");
  auto svg_path = args.value("--svg");
  const DType dt = precision(args);
  const auto model_arg = args.value("--model");
  // --weights fp16,q8_0,q4_0: the model benchmark also decodes the model so stored.
  std::vector<std::string> weights;
  if (const auto w = args.value("--weights")) {
    for (size_t at = 0; at <= w->size();) {
      const size_t comma = std::min(w->find(',', at), w->size());
      weights.push_back(w->substr(at, comma - at));
      at = comma + 1;
    }
    if (weights.size() > 8) throw Error("--weights takes at most 8 storages to compare");
    for (const auto& name : weights) storage_setting(name, DType::F32);  // refused before any benchmark runs
  }
  ContextOptions options = context_options(args);
  // vkformer bench [ops|model|all] or bench chart REPORT.json...
  std::vector<std::string> extra = args.rest();
  const std::string what = extra.empty() ? "all" : extra.front();
  if (!extra.empty()) extra.erase(extra.begin());
  if (what != "chart" && !extra.empty()) throw Error("`vkformer bench " + what + "` takes no argument '" + extra.front() + "'");

  if (what == "chart") {  // vkformer bench chart a.json b.json --svg out.svg
    if (extra.empty() || !svg_path) throw Error("usage: vkformer bench chart REPORT.json... --svg OUT.svg");
    std::vector<nlohmann::json> reports;
    for (auto& f : extra) {
      require_regular_file(f, "report");
      std::ifstream in(f, std::ios::binary);
      if (!in) throw Error("cannot read report " + f);
      std::string text;
      constexpr size_t kMostReportBytes = 64u << 20;  // a report of every device is a few hundred KB
      text.resize(kMostReportBytes + 1);
      in.read(text.data(), long(text.size()));
      text.resize(size_t(in.gcount()));
      if (text.size() > kMostReportBytes) throw Error("report " + f + " is larger than 64 MiB, which no bench report is");
      try {
        reports.push_back(json_limits::parse(text));
      } catch (const json_limits::TooDeep& e) {
        throw Error("report " + f + " is " + e.what());
      } catch (const std::exception& e) {
        throw Error("report " + f + " is not valid JSON: " + e.what());
      }
    }
    std::string svg;
    try {
      svg = bench_chart(reports);
    } catch (const nlohmann::json::exception& e) {
      throw Error("a report given to `bench chart` is not a vkformer bench report (docs/bench.schema.json): " +
                  std::string(e.what()));
    }
    write_file_atomically(*svg_path, {svg});
    std::printf("wrote %s\n", svg_path->c_str());
    return 0;
  }
  if (what != "ops" && what != "model" && what != "all") throw Error("unknown benchmark '" + what + "' (ops, model, all, chart)");
  if (!weights.empty() && what == "ops") throw Error("--weights is for the model benchmark (`vkformer bench model`)");
  if (rounds && what == "ops") throw Error("--rounds is for the model benchmark (`vkformer bench model`)");
  // The model benchmark's model: the one given, else the date sample beside this binary;
  // a model that is not there is an error before any benchmark runs.
  std::string model_dir;
  if (what != "ops") {
    model_dir = model_arg ? *model_arg : sample_model("dates");
    if (model_arg && is_gguf_file(model_dir)) checked_model_dir(model_dir);  // (refused by name)
    if (!fs::exists(fs::path(model_dir) / "model.safetensors") &&
        !fs::exists(fs::path(model_dir) / "model.safetensors.index.json"))
      throw Error("no model at " + model_dir + " (model.safetensors): pass --model DIR for the model benchmark");
  }

  // Every device unless one was chosen.
  auto devices = list_devices(options);
  std::vector<uint32_t> indices;
  if (!options.device.empty() || std::getenv("VKF_DEVICE")) {
    std::string choice = options.device.empty() ? std::getenv("VKF_DEVICE") : options.device;
    indices.push_back(choose_device(devices, choice));
  } else {
    for (auto& d : devices) indices.push_back(d.index);
  }
  const bool print = !json_stdout;
  nlohmann::json report = {{"schema", "vkformer-bench/1"}, {"vkformer_version", version()}, {"runs", nlohmann::json::array()}};
  for (uint32_t index : indices) {
    ContextOptions o = options;
    o.device = std::to_string(index);
    Context ctx(o);
    const auto& c = ctx.capabilities();
    char stamp[32];
    std::time_t now = std::time(nullptr);
    std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
    nlohmann::json run = {
        {"device", {{"index", c.index}, {"name", c.name}, {"type", to_string(c.type)}, {"vendor", c.vendor},
                    {"driver_name", c.driver_name}, {"driver_info", c.driver_info}, {"api_version", c.api_version_string}}},
        {"vkformer_version", version()},
        {"settings", {{"precision", dt == DType::F16 ? "fp16" : "fp32"}, {"quick", quick}, {"benchmark", what}, {"time", stamp}}}};
    if (what == "ops" || what == "all") run["ops"] = bench_ops(ctx, dt, quick, print, max_size);
    if (what == "model" || what == "all") {
      if (print) std::printf("\nmodel %s\n", model_dir.c_str());
      run["model"] = bench_model(ctx, model_dir, dt, quick, print, rounds);
      run["settings"]["model"] = model_dir;
      if (!weights.empty()) {
        if (print) std::printf("\nmodel %s, its weights stored each way\n", model_dir.c_str());
        run["model"]["weights"] = bench_weights(ctx, model_dir, dt, weights, quick, print, rounds);
      }
    }
    report["runs"].push_back(run);
  }
  if (json_stdout) std::printf("%s\n", report.dump(2).c_str());
  if (json_path) {
    write_file_atomically(*json_path, {report.dump(2), "\n"});
    if (print) std::printf("\nwrote %s\n", json_path->c_str());
  }
  if (svg_path) {
    write_file_atomically(*svg_path, {bench_chart({report})});
    if (print) std::printf("wrote %s\n", svg_path->c_str());
  }
  return 0;
}

}  // namespace vkf::cli
