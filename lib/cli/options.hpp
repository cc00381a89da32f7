#pragma once
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>

#include "args.hpp"
#include "vkformer/context.hpp"
#include "vkformer/gguf.hpp"
#include "vkformer/model.hpp"

namespace vkf::cli {

// Context options every subcommand understands: --device, --validation, --no-cache.
inline ContextOptions context_options(const Args& args) {
  ContextOptions o;
  if (auto d = args.value("--device")) o.device = *d;
  if (args.flag("--validation")) o.validation = true;
  if (args.flag("--no-cache")) o.disk_cache = false;
  return o;
}

// --precision fp32|fp16 (default fp32).
inline DType precision(const Args& args) {
  return args.choice("--precision", "fp32", {"fp32", "fp16"}) == "fp16" ? DType::F16 : DType::F32;
}

// A loading progress line on stderr when it is a terminal and loading has taken more than
// a second (quantizing a large model's weights takes a while), cleared when done.
inline std::function<void(size_t, size_t)> terminal_progress(const std::string& what) {
  if (!isatty(2)) return {};
  const auto start = std::chrono::steady_clock::now();
  return [what, start, shown = false](size_t done, size_t total) mutable {
    if (!shown && std::chrono::steady_clock::now() - start < std::chrono::seconds(1)) return;
    shown = true;
    std::fprintf(stderr, "\rvkformer: %s: %zu of %zu tensors%s", what.c_str(), done, total, done == total ? "\r\033[K" : "");
    std::fflush(stderr);
  };
}

// The names --weights takes: a block type or one of llama.cpp's mixes.
inline std::string weights_names() {
  std::string names;
  for (BlockType t : kBlockTypes) names += (names.empty() ? "" : ", ") + std::string(block_type_name(t));
  for (BlockMix m : {BlockMix::Q4_K_M, BlockMix::Q5_K_M}) names += std::string(", ") + block_mix_name(m);
  return names;
}

// One --weights name into o (false: not a name it takes).
inline bool set_weights(LoadOptions& o, const std::string& name) {
  o.weights = block_type_from_name(name);
  o.mix = block_mix_from_name(name);
  return o.weights || o.mix;
}

inline std::string weights_name(const LoadOptions& o) {
  return o.weights ? block_type_name(*o.weights) : o.mix ? block_mix_name(*o.mix) : to_string(o.precision);
}

// --precision and --weights as Model::load takes them.
inline LoadOptions load_options(const Args& args) {
  LoadOptions o{.precision = precision(args)};
  if (const auto w = args.value("--weights"))
    if (!set_weights(o, *w)) throw Error("--weights must be one of " + weights_names() + ", not '" + *w + "'");
  o.progress = terminal_progress(o.weights || o.mix ? "loading, quantizing to " + weights_name(o) : std::string("loading"));
  return o;
}

// The model at `dir` as --precision and --weights ask, with a warning where --weights
// stored no weight in blocks at all (every linear layer's rows not whole 32-value blocks).
inline std::shared_ptr<const Model> load_model(Context& ctx, const std::string& dir, const Args& args) {
  const LoadOptions o = load_options(args);
  auto model = Model::load(ctx, dir, o);
  const CheckpointSummary& s = model->checkpoint();
  bool in_blocks = false;
  for (BlockType t : kBlockTypes) in_blocks |= s.weight_bytes.count(block_type_name(t)) > 0;
  if ((o.weights || o.mix) && !in_blocks)
    std::fprintf(stderr,
                 "vkformer: warning: --weights %s stored no weight in blocks: the rows of every linear weight of %s "
                 "(%zu, e.g. '%s') are not a multiple of %u values, so they stay in %s (`vkformer info --model %s "
                 "--weights %s` lists them)\n",
                 weights_name(o).c_str(), dir.c_str(), s.weights_not_in_blocks.size(),
                 s.weights_not_in_blocks.empty() ? "" : s.weights_not_in_blocks.front().c_str(), kBlockValues,
                 to_string(o.precision), dir.c_str(), weights_name(o).c_str());
  return model;
}

// A model directory as the user named it: a missing one, a file or a directory without
// config.json is an error that says what --model takes.
inline std::string checked_model_dir(const std::string& dir) {
  std::error_code ec;
  if (std::filesystem::is_regular_file(dir, ec) && is_gguf_file(dir)) {  // llama.cpp's one-file format
    model_architecture(dir);
    return dir;
  }
  if (std::filesystem::is_regular_file(dir, ec))
    throw Error("model '" + dir + "' is a file; --model takes the model's directory (config.json, model.safetensors) "
                "or a GGUF file");
  model_architecture(dir);
  return dir;
}

// --model DIR, required, holding a model of `kind` (by its family in the registry); a
// model of another kind names the command that runs it.
inline std::string model_dir(const Args& args, ModelTask kind) {
  auto dir = args.value("--model");
  if (!dir) throw Error("--model DIR is required (see --help)");
  checked_model_dir(*dir);
  const ModelTask found = model_task(*dir);
  if (found != kind && found == ModelTask::Forecaster)
    throw Error("model " + *dir + " is a patch forecaster: run it with `vkformer forecast`");
  if (found != kind && found == ModelTask::Generator)
    throw Error("model " + *dir + " is a sequence-to-sequence model: run it with `vkformer generate`, `translate` or `score`");
  if (found != kind && found == ModelTask::Encoder)
    throw Error("model " + *dir + " is an encoder-only model (it generates nothing): run it with `vkformer encode`");
  return *dir;  // an unknown family: the loader says which ones it knows
}

}  // namespace vkf::cli
