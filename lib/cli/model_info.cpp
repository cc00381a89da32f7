// `vkformer info --model DIR`: what vkformer read from a model directory: the
// architecture, its sizes, the tokenizer and the generation defaults.
#include <cstdio>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "options.hpp"
#include "vkformer/model.hpp"
#include "vkformer/tokenizer.hpp"

namespace vkf::cli {

int model_info(const std::string& dir, bool json, const ContextOptions& options) {
  Context ctx(options);
  const auto model = Model::load(ctx, dir);
  const ModelConfig& c = model->config();
  std::string tokenizer;
  try {
    tokenizer = Tokenizer::for_model(dir)->describe();
  } catch (const Error& e) {
    tokenizer = std::string("none: ") + e.what();
  }
  static const char* const kActivations[] = {"none", "relu", "gelu", "gelu_tanh", "silu"};
  static const char* const kPositions[] = {"sinusoidal, interleaved", "sinusoidal, sin half then cos half",
                                           "learned"};
  const GenerateOptions g = GenerateOptions::defaults(c);
  nlohmann::json bad = g.bad_words_ids;
  nlohmann::json out = {
      {"architecture", c.architecture}, {"family", c.decoder_only ? "decoder-only" : "encoder-decoder"},
      {"d_model", c.d_model}, {"heads", c.nhead},
      {"encoder_layers", c.num_encoder_layers}, {"decoder_layers", c.num_decoder_layers},
      {"ffn_dim", c.dim_feedforward}, {"activation", kActivations[int(c.activation)]},
      {"norm", c.norm_first ? "pre-norm" : "post-norm"}, {"positions", kPositions[int(c.positions)]},
      {"max_position", c.max_position}, {"src_vocab_size", c.src_vocab_size}, {"tgt_vocab_size", c.tgt_vocab_size},
      {"pad_id", c.pad_id}, {c.decoder_only ? "bos_id" : "decoder_start_id", c.bos_id}, {"eos_id", c.eos_id},
      {"tokenizer", tokenizer},
      {"generation",
       {{"num_beams", g.beam}, {"max_new_tokens", g.max_new_tokens}, {"length_penalty", g.length_penalty},
        {"early_stopping", g.early_stopping == -1 ? nlohmann::json("never") : nlohmann::json(g.early_stopping == 1)},
        {"min_length", g.min_length}, {"no_repeat_ngram_size", g.no_repeat_ngram_size},
        {"repetition_penalty", g.repetition_penalty}, {"bad_words_ids", bad},
        {"forced_bos_id", g.forced_bos_id ? nlohmann::json(*g.forced_bos_id) : nlohmann::json()},
        {"forced_eos_id", g.forced_eos_id ? nlohmann::json(*g.forced_eos_id) : nlohmann::json()}}}};
  if (json) {
    std::printf("%s\n", out.dump(2).c_str());
    return 0;
  }
  std::printf("model %s\n", dir.c_str());
  for (const auto& [key, value] : out.items()) {
    if (key == "generation") continue;
    std::printf("  %-16s %s\n", key.c_str(), value.is_string() ? value.get<std::string>().c_str() : value.dump().c_str());
  }
  std::printf("  generation defaults%s:\n",
              c.decoder_only ? " (max_new_tokens within max_position with the prompt)"
                             : c.hugging_face ? " (generation_config.json)" : "");
  for (const auto& [key, value] : out["generation"].items()) std::printf("    %-22s %s\n", key.c_str(), value.dump().c_str());
  return 0;
}

}  // namespace vkf::cli
