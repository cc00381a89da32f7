// The C API's vkf_generate_options as the C++ GenerateOptions (capi::generate_options,
// declared in handles.hpp): the model's own processors, each C field checked by name,
// the CLI's options (penalty, end tokens, stop string, steps per submit) and the per-token
// callback with its whole-character text pieces.
#include <cmath>

#include "handles.hpp"

namespace capi {

bool generate_options_size_ok(const char* function, uint32_t size) {
  using O = vkf_generate_options;
  return struct_size_ok(function, "vkf_generate_options", size, kFirstGenerateOptionsSize, sizeof(O),
                        {VKF_FIELD(O, struct_size), VKF_FIELD(O, max_new_tokens), VKF_FIELD(O, beam),
                         VKF_FIELD(O, length_penalty), VKF_FIELD(O, temperature), VKF_FIELD(O, top_k),
                         VKF_FIELD(O, top_p), VKF_FIELD(O, seed), VKF_FIELD(O, submit_budget_ms), VKF_FIELD(O, on_token),
                         VKF_FIELD(O, on_token_user), VKF_FIELD(O, repetition_penalty), VKF_FIELD(O, eos_ids),
                         VKF_FIELD(O, eos_id_count), VKF_FIELD(O, stop), VKF_FIELD(O, max_steps_per_submit),
                         VKF_FIELD(O, reserved), VKF_FIELD(O, no_repeat_ngram_size), VKF_FIELD(O, min_length), VKF_FIELD(O, min_new_tokens),
                         VKF_FIELD(O, bad_words), VKF_FIELD(O, bad_words_length), VKF_FIELD(O, early_stopping)});
}

std::optional<Generation> generate_options(const vkf_generate_options* caller, const vkf::ModelConfig& c,
                                           const char* function,
                                           const std::shared_ptr<const vkf::Tokenizer>& tokenizer,
                                           size_t longest_source) {
  // The model's own processors (a Hugging Face generation_config.json's min_length,
  // no_repeat_ngram_size, bad words, forced tokens, repetition penalty), as the CLI takes
  // them: without them an app's output would differ from transformers' and the CLI's.
  // Beam width and length penalty stay the caller's (vkf_model_info has the model's, for
  // an app that wants them); the length is the model's default unless the caller sets one.
  Generation out;
  vkf::GenerateOptions& g = out.options;
  g = vkf::GenerateOptions::defaults(c, longest_source);
  g.beam = 1;
  g.length_penalty = 1.0f;
  g.num_return_sequences = 1;  // one output per source: the C results hold one each
  g.temperature = 0;           // sampling is the caller's to ask (temperature), as beams are
  if (!caller) return out;
  if (!generate_options_size_ok(function, caller->struct_size)) return std::nullopt;
  const vkf_generate_options options = widened(*caller, caller->struct_size, vkf_generate_options_default());
  const vkf_generate_options* o = &options;
  // Zero-initialised fields work: where 0 is no valid value (beam, top_p, max_new_tokens)
  // it means the default; where it means something (temperature 0: greedy, top_k 0: all
  // tokens, submit_budget_ms 0: no bound, length_penalty 0: no length normalisation) it
  // keeps that meaning. Errors name the C field.
  auto bad = [&](const std::string& why) -> std::optional<Generation> {
    invalid(function, "vkf_generate_options." + why);
    return std::nullopt;
  };
  if (o->max_new_tokens) g.max_new_tokens = o->max_new_tokens;  // else the model's default, fitted above
  g.beam = o->beam ? o->beam : 1;
  if (g.beam > vkf::GenerateOptions::kMaxBeam)
    return bad("beam must be from 1 to " + std::to_string(vkf::GenerateOptions::kMaxBeam) + " (0: 1, greedy), got " +
               std::to_string(o->beam));
  if (!(o->length_penalty >= -10 && o->length_penalty <= 10))
    return bad("length_penalty must be from -10 to 10, got " + std::to_string(o->length_penalty));
  g.length_penalty = o->length_penalty;
  if (!(o->temperature >= 0 && o->temperature <= vkf::GenerateOptions::kMaxTemperature))
    return bad("temperature must be from 0 (greedy) to " + std::to_string(int(vkf::GenerateOptions::kMaxTemperature)) +
               ", got " + std::to_string(o->temperature));
  g.temperature = o->temperature;
  g.top_k = o->top_k;
  if (!(o->top_p >= 0 && o->top_p <= 1))
    return bad("top_p must be in (0, 1] (0: the default, 1), got " + std::to_string(o->top_p));
  g.top_p = o->top_p == 0 ? 1.0f : o->top_p;
  g.seed = o->seed;
  // Settings that would do nothing are refused, as the command refuses them: sampling's
  // cut-offs without sampling, a length penalty without beams (0 and 1 both mean none).
  if (g.temperature == 0 && (o->top_k != 0 || g.top_p != 1.0f))
    return bad("top_k and top_p shape sampling: set temperature above 0 to sample, or leave them at 0 (greedy)");
  if (g.temperature > 0 && g.beam > 1) return bad("temperature samples and beam searches: set one or the other");
  if (g.beam <= 1 && o->length_penalty != 0 && o->length_penalty != 1.0f)
    return bad("length_penalty scores beams: set beam above 1 with it, or leave it at 1");
  if (!(o->submit_budget_ms >= 0)) return bad("submit_budget_ms must be >= 0 (0: no budget)");
  g.submit_budget_ms = o->submit_budget_ms;
  if (o->repetition_penalty != 0) {
    if (!(o->repetition_penalty > 0 && o->repetition_penalty <= vkf::GenerateOptions::kMaxRepetitionPenalty))
      return bad("repetition_penalty must be above 0 and at most " +
                 std::to_string(int(vkf::GenerateOptions::kMaxRepetitionPenalty)) +
                 " (1: none; 0: the model's own), got " + std::to_string(o->repetition_penalty));
    g.repetition_penalty = o->repetition_penalty;
  }
  constexpr size_t kMostEosIds = 1024;  // more end tokens than any vocabulary's specials: a wrong count
  if (o->eos_id_count > kMostEosIds)
    return bad("eos_id_count " + std::to_string(o->eos_id_count) + " is more than " + std::to_string(kMostEosIds));
  if (o->eos_id_count && !o->eos_ids) return bad("eos_ids is NULL but eos_id_count is " + std::to_string(o->eos_id_count));
  if (o->eos_id_count) g.eos_ids.assign(o->eos_ids, o->eos_ids + o->eos_id_count);  // checked against the vocabulary by generate
  g.max_steps_per_submit = o->max_steps_per_submit ? o->max_steps_per_submit : 64;
  // transformers' processors over the model's own: 0 keeps its, VKF_PROCESSOR_OFF none.
  auto count = [](uint32_t field, uint32_t& to) {
    if (field == VKF_PROCESSOR_OFF) to = 0;
    else if (field) to = field;
  };
  count(o->no_repeat_ngram_size, g.no_repeat_ngram_size);
  count(o->min_length, g.min_length);
  count(o->min_new_tokens, g.min_new_tokens);
  constexpr size_t kMostBadWords = 1u << 20;
  if (o->bad_words_length > kMostBadWords)
    return bad("bad_words_length " + std::to_string(o->bad_words_length) + " is more than " + std::to_string(kMostBadWords));
  if (o->bad_words_length && !o->bad_words) return bad("bad_words is NULL but bad_words_length is " + std::to_string(o->bad_words_length));
  if (o->bad_words_length) {
    g.bad_words_ids.clear();
    for (size_t at = 0; at < o->bad_words_length;) {
      const size_t n = o->bad_words[at];
      if (n == 0 || n > o->bad_words_length - at - 1)
        return bad("bad_words: the sequence at value " + std::to_string(at) + " gives length " + std::to_string(n) +
                   ", which is 0 or runs past bad_words_length");
      g.bad_words_ids.emplace_back(o->bad_words + at + 1, o->bad_words + at + 1 + n);  // ids checked by generate
      at += 1 + n;
    }
  }
  switch (o->early_stopping) {
    case 0: break;
    case 1: g.early_stopping = 1; break;
    case 2: g.early_stopping = 0; break;
    case 3: g.early_stopping = -1; break;
    default: return bad("early_stopping must be 0 (the model's own), 1 (true), 2 (false) or 3 (never), got " +
                        std::to_string(o->early_stopping));
  }
  std::function<bool(size_t, const std::vector<uint32_t>&)> stop_string;
  if (o->stop) {
    const std::string text = o->stop;
    if (text.empty()) return bad("stop is empty: it would end every output at once (NULL: no stop string)");
    if (!tokenizer) return bad("stop needs the model's tokenizer, and this model has none (vkf_model_info.has_tokenizer)");
    if (g.beam > 1) return bad("stop ends greedy or sampled outputs; beam search ends at the model's EOS only");
    try {
      tokenizer->encode(text);  // refuses what no text holds: bytes that are not UTF-8
    } catch (const vkf::Error& e) {
      return bad(std::string("stop could never match generated text: ") + e.what());
    }
    // The whole output's text each time, as the CLI does: the string may span tokens.
    stop_string = [tokenizer, text](size_t, const std::vector<uint32_t>& tokens) {
      return tokenizer->decode(tokens).find(text) != std::string::npos;
    };
    g.stop = stop_string;
  }
  if (o->on_token) {
    // Each output's text as whole characters (TextStream), and which outputs the
    // callback ended; called on the generating thread only, so no lock.
    struct Stream {
      std::vector<std::unique_ptr<vkf::TextStream>> text;
      std::vector<bool> ended;
      vkf::TextStream& of(size_t output, const vkf::Tokenizer& tokenizer) {
        while (text.size() <= output) text.push_back(std::make_unique<vkf::TextStream>(tokenizer));
        return *text[output];
      }
    };
    auto st = std::make_shared<Stream>();
    g.on_token = [st, tokenizer, cb = o->on_token, user = o->on_token_user](size_t output, uint32_t token) {
      std::string piece;
      if (tokenizer) piece = st->of(output, *tokenizer).push(token);
      if (cb(user, output, token, tokenizer ? piece.c_str() : nullptr, piece.size()) != 0) {
        if (st->ended.size() <= output) st->ended.resize(output + 1, false);
        st->ended[output] = true;
      }
    };
    out.finish = [st, tokenizer, cb = o->on_token, user = o->on_token_user](size_t outputs) {
      for (size_t i = 0; i < outputs; ++i) {
        const std::string rest = tokenizer ? st->of(i, *tokenizer).finish() : std::string();
        cb(user, i, VKF_TOKEN_END, tokenizer ? rest.c_str() : nullptr, rest.size());
      }
    };
    if (g.beam <= 1)
      g.stop = [st, stop_string](size_t output, const std::vector<uint32_t>& tokens) {
        return (output < st->ended.size() && st->ended[output]) || (stop_string && stop_string(output, tokens));
      };
  }
  return out;
}

}  // namespace capi
