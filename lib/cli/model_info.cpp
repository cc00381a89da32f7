// `vkformer info --model DIR`: what vkformer read from a model directory: the
// architecture, its sizes, attention heads and positions, the checkpoint's parameters
// and storage, the tokenizer and the generation defaults.
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "options.hpp"
#include "vkformer/model.hpp"
#include "vkformer/tokenizer.hpp"

namespace vkf::cli {

namespace {

// A float as its shortest decimal (1e-05, not 9.999999747378752e-06).
double decimal(float f) {
  char text[32];
  std::snprintf(text, sizeof text, "%.7g", double(f));
  return std::strtod(text, nullptr);
}

nlohmann::ordered_json describe(const ModelConfig& c, const CheckpointSummary& file, DType precision,
                        const std::string& tokenizer) {
  nlohmann::ordered_json positions = {{"kind", positions_name(c.positions)}};
  if (c.positions == ModelConfig::Positions::Rotary) {
    positions["rope_theta"] = c.rope_theta;
    positions["rope_scaling"] = c.rope_scaling.empty() ? nlohmann::json() : nlohmann::json(c.rope_scaling);
    if (c.rope_position_scale != 1.0f) positions["position_scale"] = c.rope_position_scale;
  }
  const GenerateOptions g = GenerateOptions::defaults(c);
  return {
      {"architecture", c.architecture},
      {"family", c.kind_name()},
      {"d_model", c.d_model},
      {"heads", c.nhead},
      {"kv_heads", c.kv_head_count()},
      {"head_dim", c.head_dim()},
      {"encoder_layers", c.num_encoder_layers},
      {"decoder_layers", c.num_decoder_layers},
      {"ffn_dim", c.dim_feedforward},
      {"ffn", c.gated_ffn ? "gated (down(act(gate x) * up x))" : "two layers (act between)"},
      {"activation", activation_name(c.activation)},
      {"norm", std::string(c.norm_first ? "pre-norm" : "post-norm") + (c.norm_kind == NormKind::RMSNorm ? ", RMSNorm" : ", LayerNorm")},
      {"norm_eps", decimal(c.layer_norm_eps)},
      {"positions", positions},
      {"max_position", c.max_position},
      {"src_vocab_size", c.src_vocab_size},
      {"tgt_vocab_size", c.tgt_vocab_size},
      {"pad_id", c.pad_id},
      {c.kind == ModelKind::DecoderOnly ? "bos_id" : "decoder_start_id", c.bos_id},
      {"eos_id", c.eos_id},
      {"parameters", file.parameters},
      {"checkpoint",
       {{"file", file.file}, {"tensors", file.tensors}, {"bytes", file.bytes}, {"dtypes", file.dtypes}}},
      {"precision", precision == DType::F16 ? "fp16" : "fp32"},
      {"weights", {{"bytes", file.weight_bytes}, {"not_in_blocks", file.weights_not_in_blocks}}},
      {"tokenizer", tokenizer},
      {"generation",
       {{"num_beams", g.beam},
        {"max_new_tokens", g.max_new_tokens},
        {"length_penalty", g.length_penalty},
        {"early_stopping", g.early_stopping == -1 ? nlohmann::json("never") : nlohmann::json(g.early_stopping == 1)},
        {"num_return_sequences", g.num_return_sequences},
        {"min_length", g.min_length},
        {"min_new_tokens", g.min_new_tokens},
        {"no_repeat_ngram_size", g.no_repeat_ngram_size},
        {"sampling", g.temperature > 0 ? nlohmann::json({{"temperature", g.temperature}, {"top_k", g.top_k}, {"top_p", g.top_p}})
                                       : nlohmann::json("none")},
        {"repetition_penalty", g.repetition_penalty},
        {"bad_words_ids", g.bad_words_ids},
        {"forced_bos_id", g.forced_bos_id ? nlohmann::json(*g.forced_bos_id) : nlohmann::json()},
        {"forced_eos_id", g.forced_eos_id ? nlohmann::json(*g.forced_eos_id) : nlohmann::json()}}}};
}

// 1234567 -> "1.23 M"; the exact count stays in --json.
std::string short_count(uint64_t n, const char* unit) {
  char text[48];
  if (n >= 1000000000)
    std::snprintf(text, sizeof text, "%.2f G%s", n / 1e9, unit);
  else if (n >= 1000000)
    std::snprintf(text, sizeof text, "%.2f M%s", n / 1e6, unit);
  else if (n >= 1000)
    std::snprintf(text, sizeof text, "%.1f k%s", n / 1e3, unit);
  else
    std::snprintf(text, sizeof text, "%llu %s", static_cast<unsigned long long>(n), unit);
  return text;
}

std::string plain(const nlohmann::ordered_json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

}  // namespace

int model_info(const std::string& dir, bool json, const ContextOptions& options, const LoadOptions& load) {
  Context ctx(options);
  const auto model = Model::load(ctx, dir, load);
  const ModelConfig& c = model->config();
  std::string tokenizer;
  try {
    tokenizer = Tokenizer::for_model(dir)->describe();
  } catch (const Error& e) {
    tokenizer = std::string("none: ") + e.what();
  }
  const nlohmann::ordered_json out = describe(c, model->checkpoint(), model->precision(), tokenizer);
  if (json) {
    std::printf("%s\n", out.dump(2).c_str());
    return 0;
  }
  std::printf("model %s\n", dir.c_str());
  for (const auto& [key, value] : out.items()) {
    if (key == "generation" || key == "positions" || key == "checkpoint" || key == "weights") continue;
    std::string text = plain(value);
    if (key == "parameters") text = short_count(value.get<uint64_t>(), "") + " (" + text + ")";
    std::printf("  %-18s %s\n", key.c_str(), text.c_str());
    if (key == "norm_eps") {  // positions after the layer's shape, with their rotary settings
      std::string p = out["positions"]["kind"].get<std::string>();
      for (const auto& [k, v] : out["positions"].items())
        if (k != "kind") p += ", " + k + " " + plain(v);
      std::printf("  %-18s %s\n", "positions", p.c_str());
    }
  }
  const nlohmann::ordered_json& file = out["checkpoint"];
  std::string dtypes;
  for (const auto& [type, count] : file["dtypes"].items())
    dtypes += (dtypes.empty() ? "" : ", ") + type + " " + short_count(count.get<uint64_t>(), "");
  std::printf("  %-18s %s: %s in %s tensors (%s)\n", "checkpoint", file["file"].get<std::string>().c_str(),
              short_count(file["bytes"].get<uint64_t>(), "B").c_str(), file["tensors"].dump().c_str(), dtypes.c_str());
  std::string weights;
  for (const auto& [storage, bytes] : out["weights"]["bytes"].items())
    weights += (weights.empty() ? "" : ", ") + storage + " " + short_count(bytes.get<uint64_t>(), "B");
  std::printf("  %-18s %s on the device\n", "weights", weights.c_str());
  for (const auto& name : out["weights"]["not_in_blocks"])
    std::printf("  %-18s %s: its rows are not whole 32-value blocks\n", "  not in blocks", name.get<std::string>().c_str());
  std::printf("  generation defaults%s:\n",
              c.kind == ModelKind::DecoderOnly ? " (max_new_tokens within max_position with the prompt)"
                             : c.hugging_face ? " (generation_config.json)" : "");
  for (const auto& [key, value] : out["generation"].items()) std::printf("    %-22s %s\n", key.c_str(), value.dump().c_str());
  return 0;
}

}  // namespace vkf::cli
