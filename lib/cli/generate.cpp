// `vkformer generate` and `vkformer score` (and the .npy writer `encode` shares).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "commands.hpp"
#include "options.hpp"
#include "files.hpp"
#include "vkformer/model.hpp"
#include "vkformer/tokenizer.hpp"

namespace vkf::cli {

std::vector<uint32_t> parse_ids(const std::string& text, const char* what) {
  std::vector<uint32_t> ids;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) ids.push_back(uint32_t(parse_integer(item, std::string(what) + " entry", 0, UINT32_MAX)));
  if (ids.empty()) throw Error(std::string(what) + " is empty");
  return ids;
}

namespace {

struct ModelArgs {
  std::string dir;
  DType precision = DType::F32;
  bool profile = false;
};

ModelArgs model_args(const Args& args) {
  ModelArgs m;
  m.dir = model_dir(args, ModelTask::Generator);
  m.precision = precision(args);
  m.profile = args.flag("--profile");
  return m;
}

uint64_t fresh_seed() {
  std::random_device device;  // the kernel's random source on Linux
  return (uint64_t(device()) << 32) | device();
}

}  // namespace

// Sampling options without --temperature, or sampling with a beam, would be silently
// ignored: they are errors that say what to use instead.
void check_decoding_options(const Args& args, const GenerateOptions& o) {
  if (o.temperature == 0)
    for (const char* sampling : {"--top-k", "--top-p", "--seed"})
      if (args.given(sampling))
        throw Error(std::string(sampling) + " is a sampling option: give --temperature T (> 0) to sample, or drop it for greedy or beam search");
  if (o.temperature > 0 && o.beam > 1)
    throw Error("--temperature samples and --beam " + std::to_string(o.beam) +
                " searches: vkformer does not sample within a beam; give one or the other");
  for (const char* beam : {"--length-penalty", "--early-stopping", "--num-return-sequences"})
    if (args.given(beam) && o.beam == 1)
      throw Error(std::string(beam) + " is a beam search option: give --beam K (K > 1) with it");
}

// The family decides the input options: an encoder-decoder's --src-ids (and score's
// --tgt-ids), a decoder-only model's --ids; the other family's are refused by name.
void check_family_options(const Args& args, const ModelConfig& config, const char* command) {
  if (config.kind == ModelKind::DecoderOnly) {
    for (const char* o : {"--src-ids", "--tgt-ids"})
      if (args.given(o))
        throw Error(std::string(o) + " is for encoder-decoder models; '" + config.architecture +
                    "' is decoder-only: give its token ids with --ids 5,17,9");
    if (!args.given("--ids")) throw Error(std::string(command) + " needs --ids 5,17,9 for decoder-only model '" + config.architecture + "'");
  } else if (args.given("--ids")) {
    throw Error(std::string("--ids is for decoder-only models; '") + config.architecture +
                "' is an encoder-decoder: give --src-ids" + (std::string(command) == "score" ? " and --tgt-ids" : ""));
  }
}

std::vector<std::vector<uint32_t>> parse_id_lists(const std::string& text, const char* what) {
  if (text.empty()) throw Error(std::string(what) + " is empty");
  std::vector<std::vector<uint32_t>> lists;
  std::stringstream ss(text);
  std::string one;
  while (std::getline(ss, one, ';')) lists.push_back(parse_ids(one, what));
  return lists;
}

int generate(const Args& args) {
  ModelArgs ma = model_args(args);
  const bool json = args.flag("--json");
  const bool warmup = args.flag("--warmup");
  const bool text_prompt = args.given("--prompt");
  if (int(args.given("--src-ids")) + int(args.given("--ids")) + int(text_prompt) != 1)
    throw Error("give one of --src-ids 5,17,9 (an encoder-decoder's sources), --ids 5,17,9 (a decoder-only model's "
                "prompts; several: separate them with ';') or --prompt \"text\" (a decoder-only model with a tokenizer)");
  ContextOptions co = context_options(args);
  const char* input = args.given("--ids") ? "--ids" : "--src-ids";
  std::vector<std::vector<uint32_t>> sources;
  if (!text_prompt) sources = parse_id_lists(*args.value(input), input);

  Context ctx(co);
  auto t0 = std::chrono::steady_clock::now();
  auto model = load_model(ctx, ma.dir, args);
  const ModelConfig& config = model->config();
  if (text_prompt && config.kind != ModelKind::DecoderOnly)
    throw Error("--prompt continues text with a decoder-only model; '" + config.architecture +
                "' is an encoder-decoder: use `vkformer translate` for text, or --src-ids");
  if (!text_prompt) check_family_options(args, config, "generate");
  // A decoder-only model's text: its tokenizer (when the directory has one) encodes
  // --prompt and decodes what is generated, streamed as the tokens arrive.
  std::unique_ptr<Tokenizer> tokenizer;
  if (config.kind == ModelKind::DecoderOnly) {
    try {
      tokenizer = Tokenizer::for_model(ma.dir);
    } catch (const Error& e) {
      if (text_prompt) throw Error(std::string("--prompt needs the model's tokenizer: ") + e.what());
    }
  }
  if (text_prompt) {
    const std::string prompt = *args.value("--prompt");
    if (const size_t most = tokenizer->text_bytes_for(config.max_position); prompt.size() > most)
      throw Error("--prompt is " + std::to_string(prompt.size()) + " bytes, more than the " + std::to_string(most) +
                  " a model of " + std::to_string(config.max_position) + " positions can read");
    sources = {tokenizer->encode(prompt)};
    if (sources[0].empty()) throw Error("--prompt is empty: there is nothing to continue");
  }
  // The model's own defaults (a Hugging Face generation_config.json), as translate takes
  // them; vkformer's own models: greedy, 64 tokens at most. Options override them.
  // A decoder-only model's default: within the positions the longest prompt leaves.
  size_t longest = 0;
  for (const auto& p : sources) longest = std::max(longest, p.size());
  GenerateOptions o = GenerateOptions::defaults(config, longest);
  o.max_new_tokens = args.count("--max-new-tokens", o.max_new_tokens);
  o.beam = args.count("--beam", o.beam);
  o.length_penalty = args.number("--length-penalty", o.length_penalty);
  // Sampling: the model's own (generation_config.json's do_sample) unless --beam or
  // --temperature say otherwise.
  if (args.given("--beam") && o.beam > 1 && !args.given("--temperature")) o.temperature = 0;
  if (args.given("--temperature")) {
    o.temperature = args.number("--temperature", 0.0f);
    if (!config.generation.do_sample) o.top_k = 0;  // not the model's sampling: keep every token unless asked
  }
  o.top_k = args.count("--top-k", o.temperature > 0 ? o.top_k : 0);
  o.top_p = args.number("--top-p", o.temperature > 0 ? o.top_p : 1.0f);
  o.repetition_penalty = args.number("--repetition-penalty", o.repetition_penalty);
  // transformers' processors and beam settings, over the model's own.
  o.num_return_sequences = args.count("--num-return-sequences", o.beam > 1 ? o.num_return_sequences : 1);
  o.no_repeat_ngram_size = args.count("--no-repeat-ngram-size", o.no_repeat_ngram_size);
  o.min_length = args.count("--min-length", o.min_length);
  o.min_new_tokens = args.count("--min-new-tokens", o.min_new_tokens);
  if (const auto bad = args.value("--bad-words-ids")) {
    o.bad_words_ids = parse_id_lists(*bad, "--bad-words-ids");
  }
  if (const auto early = args.value("--early-stopping")) {
    if (*early == "true") o.early_stopping = 1;
    else if (*early == "false") o.early_stopping = 0;
    else if (*early == "never") o.early_stopping = -1;
    else throw Error("--early-stopping must be true, false or never, not '" + *early + "'");
  }
  if (const auto ids = args.value("--eos-ids")) o.eos_ids = parse_ids(*ids, "--eos-ids");
  if (const auto stop = args.value("--stop")) {
    if (stop->empty()) throw Error("--stop is empty: it would end every output at once");
    if (tokenizer) try {
        tokenizer->encode(*stop);  // refuses what no text holds: bytes that are not UTF-8, a NUL
      } catch (const Error& e) {
        throw Error(std::string("--stop could never match generated text: ") + e.what());
      }
    if (!tokenizer)
      throw Error("--stop needs a decoder-only model with a tokenizer (GPT-2's vocab.json and merges.txt, or tokenizer.json "
                  "or tokenizer.model)");
    o.stop = [&tok = *tokenizer, text = *stop](size_t, const std::vector<uint32_t>& tokens) {
      return tok.decode(tokens).find(text) != std::string::npos;  // the token that completes it is kept
    };
  }
  // No --seed: a fresh one each run (as llama.cpp does), reported so the run can be repeated.
  const bool seeded = args.given("--seed");
  o.seed = seeded ? args.count64("--seed", 0) : fresh_seed();
  o.submit_budget_ms = args.number("--submit-budget-ms", o.submit_budget_ms);
  o.max_steps_per_submit = args.count("--max-steps-per-submit", 64);
  check_decoding_options(args, o);
  if (config.kind != ModelKind::DecoderOnly && o.max_new_tokens > config.max_position)
    throw Error("--max-new-tokens " + std::to_string(o.max_new_tokens) + " is more than the model's max_position " +
                std::to_string(config.max_position));
  auto t1 = std::chrono::steady_clock::now();
  const auto t1_load = t1;
  Session session(model);
  session.set_profile(ma.profile);
  if (warmup) {  // compiles every pipeline, fills the caches: what follows times decoding alone
    session.generate(sources, o);
    t1 = std::chrono::steady_clock::now();
  }
  // --prompt without --json: the text as it is generated.
  std::optional<TextStream> stream;
  if (text_prompt && !json) {
    stream.emplace(*tokenizer);
    o.on_token = [&](size_t, uint32_t id) {
      const std::string piece = stream->push(id);
      std::fwrite(piece.data(), 1, piece.size(), stdout);
      std::fflush(stdout);
    };
  }
  auto out = session.generate(sources, o);
  auto t2 = std::chrono::steady_clock::now();
  if (stream) {
    const std::string rest = stream->finish();
    std::fwrite(rest.data(), 1, rest.size(), stdout);
    std::fputc('\n', stdout);
    std::fflush(stdout);
  }
  size_t tokens = 0;
  std::vector<bool> finished;
  for (size_t i = 0; i < out.size(); ++i) {
    tokens += out[i].size();
    const auto& more = model->config().more_eos_ids;
    const bool eos = !out[i].empty() && (out[i].back() == model->config().eos_id ||
                                         std::find(o.eos_ids.begin(), o.eos_ids.end(), out[i].back()) != o.eos_ids.end() ||
                                         std::find(more.begin(), more.end(), out[i].back()) != more.end());
    finished.push_back(eos || (!out[i].empty() && o.stop && o.stop(i, out[i])));
    if (!finished.back() && o.max_new_tokens > 0) {
      const char* input = config.kind == ModelKind::DecoderOnly ? "prompt" : "source";
      const std::string which = o.num_return_sequences > 1 ? "output " + std::to_string(i) + " (" + input + " " +
                                                                 std::to_string(i / o.num_return_sequences) + ")"
                                                           : std::string(input) + " " + std::to_string(i);
      std::fprintf(stderr, "vkformer generate: warning: %s stopped at --max-new-tokens %u before the end token\n",
                   which.c_str(), o.max_new_tokens);
    }
  }
  const double secs = std::chrono::duration<double>(t2 - t1).count();
  if (json) {
    nlohmann::json j;
    j["ids"] = out;  // one list per source, always
    if (tokenizer) {  // a decoder-only model's continuations as text
      j["text"] = nlohmann::json::array();
      for (const auto& ids : out) j["text"].push_back(tokenizer->decode(ids));
    }
    j["finished"] = finished;
    j["device"] = ctx.capabilities().name;
    if (o.temperature > 0) j["seed"] = o.seed;
    j["seconds"] = secs;
    j["load_seconds"] = std::chrono::duration<double>(t1_load - t0).count();  // the model and its tokenizer
    j["weight_bytes"] = model->checkpoint().weight_bytes;  // on the device, by storage
    j["tokens_per_second"] = tokens / secs;  // encode and decode together
    const GenerateStats& st = session.last_stats();
    j["encode_ms"] = st.encode_ms;  // an encoder-decoder's; 0 for a decoder-only model
    if (config.kind == ModelKind::DecoderOnly) {
      j["prompt_tokens"] = st.prompt_tokens;
      j["prompt_ms"] = st.prompt_ms;
      j["prompt_tokens_per_second"] = st.prompt_tokens_per_second();
    }
    j["decode_ms"] = st.decode_ms;
    j["decode_tokens"] = st.decode_tokens;
    j["decode_tokens_per_second"] = st.decode_tokens_per_second();
    j["counters"] = {{"submits_per_token", st.submits_per_token()},
                     {"recordings_per_token", st.recordings_per_token()},
                     {"dispatches_per_decoder_layer", st.dispatches_per_decoder_layer},
                     {"dispatches_per_encoder_layer", st.dispatches_per_encoder_layer},
                     {"encode_submits", st.encode_submits}};
    if (ma.profile) j["counters"]["encode_gpu_ms"] = st.encode_gpu_ms;  // timestamps: --profile only
    std::printf("%s\n", j.dump().c_str());
  } else {
    for (auto& ids : out) {
      if (stream) break;  // the text went out as it came
      std::string line;
      for (size_t i = 0; i < ids.size(); ++i) line += (i ? "," : "") + std::to_string(ids[i]);
      std::printf("%s\n", line.c_str());
    }
    std::fprintf(stderr, "vkformer: %zu tokens in %.3f s (%.1f tokens/s) on %s; model loaded in %.3f s\n", tokens, secs,
                 tokens / secs, ctx.capabilities().name.c_str(), std::chrono::duration<double>(t1 - t0).count());
    const GenerateStats& st = session.last_stats();
    if (config.kind == ModelKind::DecoderOnly)
      std::fprintf(stderr, "vkformer: prompt %llu tokens in %.1f ms (%.1f tokens/s); decode %llu tokens in %.1f ms (%.1f tokens/s)\n",
                   static_cast<unsigned long long>(st.prompt_tokens), st.prompt_ms, st.prompt_tokens_per_second(),
                   static_cast<unsigned long long>(st.decode_tokens), st.decode_ms, st.decode_tokens_per_second());

    if (o.temperature > 0 && !seeded)
      std::fprintf(stderr, "vkformer: sampled with --seed %llu (give it to repeat this run)\n",
                   static_cast<unsigned long long>(o.seed));
  }
  if (ma.profile) {
    const GenerateStats& st = session.last_stats();
    if (config.kind == ModelKind::DecoderOnly)
      std::fprintf(stderr,
                   "prompt %llu tokens in %.3f ms (%.1f tokens/s), decode %.3f ms (%.1f tokens/s); per token: %.3f "
                   "submits, %.3f recordings; %.1f dispatches per decoder layer in a step, %.1f in the prompt pass\n%s",
                   static_cast<unsigned long long>(st.prompt_tokens), st.prompt_ms, st.prompt_tokens_per_second(),
                   st.decode_ms, st.decode_tokens_per_second(), st.submits_per_token(), st.recordings_per_token(),
                   st.dispatches_per_decoder_layer, st.dispatches_per_encoder_layer, session.profile_report().c_str());
    else
      std::fprintf(stderr,
                   "encode %.3f ms, decode %.3f ms (%.1f tokens/s); per token: %.3f submits, %.3f recordings; "
                   "%.1f dispatches per decoder layer, %.1f per encoder layer; encode: %llu submits, %.3f ms on the GPU\n%s",
                   st.encode_ms, st.decode_ms, st.decode_tokens_per_second(), st.submits_per_token(),
                   st.recordings_per_token(), st.dispatches_per_decoder_layer, st.dispatches_per_encoder_layer,
                   static_cast<unsigned long long>(st.encode_submits), st.encode_gpu_ms,
                   session.profile_report().c_str());
  }
  return 0;
}

int score(const Args& args) {
  ModelArgs ma = model_args(args);
  const bool json = args.flag("--json");
  auto src = args.value("--src-ids"), tgt = args.value("--tgt-ids"), ids = args.value("--ids"),
       out = args.value("--logits-out");
  if (!ids && (!src || !tgt))
    throw Error("score needs --src-ids and --tgt-ids (an encoder-decoder) or --ids (a decoder-only model)");
  ContextOptions co = context_options(args);
  const auto t = ids ? parse_ids(*ids, "--ids") : parse_ids(*tgt, "--tgt-ids");
  const auto s = src ? parse_ids(*src, "--src-ids") : std::vector<uint32_t>{};
  Context ctx(co);
  auto model = load_model(ctx, ma.dir, args);
  check_family_options(args, model->config(), "score");
  Session session(model);
  session.set_profile(ma.profile);
  auto logits = model->config().kind == ModelKind::DecoderOnly ? session.score(t) : session.score(s, t);
  const uint32_t V = model->config().tgt_vocab_size;
  if (out) write_npy(*out, logits, t.size(), V);
  // Row i predicts token i + 1: the log-probability of each token after the first.
  double log_probability = 0;
  for (size_t i = 0; i + 1 < t.size(); ++i) {
    const float* row = logits.data() + i * V;
    double m = row[0];
    for (uint32_t v = 1; v < V; ++v) m = std::max(m, double(row[v]));
    double sum = 0;
    for (uint32_t v = 0; v < V; ++v) sum += std::exp(double(row[v]) - m);
    log_probability += double(row[t[i + 1]]) - m - std::log(sum);
  }
  const size_t scored = t.size() - 1;
  const double perplexity = scored ? std::exp(-log_probability / double(scored)) : 1.0;
  if (json) {
    nlohmann::json j = {{"shape", {t.size(), V}},
                        {"dtype", "float32"},
                        {"scored_tokens", scored},
                        {"log_probability", log_probability},
                        {"perplexity", perplexity},
                        {"device", ctx.capabilities().name}};
    if (out) j["logits_file"] = *out;
    std::printf("%s\n", j.dump().c_str());
  } else {
    std::printf("log-probability %.6f over %zu tokens (each after the first), perplexity %.4f%s%s\n", log_probability,
                scored, perplexity, out ? "; logits written to " : "", out ? out->c_str() : "");
  }
  if (ma.profile) std::fprintf(stderr, "%s", session.profile_report().c_str());
  return 0;
}

}  // namespace vkf::cli
