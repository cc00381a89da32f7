#pragma once
#include <filesystem>
#include <string>

#include "args.hpp"
#include "vkformer/context.hpp"
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

// --precision and --weights as Model::load takes them.
inline LoadOptions load_options(const Args& args) {
  LoadOptions o{.precision = precision(args)};
  if (const auto w = args.value("--weights")) {
    o.weights = block_type_from_name(*w);
    if (!o.weights) {
      std::string names;
      for (BlockType t : kBlockTypes) names += (names.empty() ? "" : ", ") + std::string(block_type_name(t));
      throw Error("--weights must be one of " + names + ", not '" + *w + "'");
    }
  }
  return o;
}

// A model directory as the user named it: a missing one, a file or a directory without
// config.json is an error that says what --model takes.
inline std::string checked_model_dir(const std::string& dir) {
  std::error_code ec;
  if (std::filesystem::is_regular_file(dir, ec))
    throw Error("model '" + dir + "' is a file; --model takes the model's directory (config.json, model.safetensors)");
  model_architecture(dir);
  return dir;
}

// --model DIR, required, holding a model of `kind` (by its family in the registry); a
// model of another kind names the command that runs it.
inline std::string model_dir(const Args& args, ModelKind kind) {
  auto dir = args.value("--model");
  if (!dir) throw Error("--model DIR is required (see --help)");
  checked_model_dir(*dir);
  const ModelKind found = model_kind(*dir);
  if (found != kind && found == ModelKind::Forecaster)
    throw Error("model " + *dir + " is a patch forecaster: run it with `vkformer forecast`");
  if (found != kind && found == ModelKind::Generator)
    throw Error("model " + *dir + " is a sequence-to-sequence model: run it with `vkformer generate`, `translate` or `score`");
  return *dir;  // an unknown family: the loader says which ones it knows
}

}  // namespace vkf::cli
