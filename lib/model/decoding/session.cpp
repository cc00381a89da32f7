// The public Session: checks what callers ask for, then runs the graph and a decoder.
#include <algorithm>
#include <chrono>
#include <cmath>

#include "decoding.hpp"
#include "hf_decoding.hpp"

namespace vkf {

struct Session::Impl {
  explicit Impl(std::shared_ptr<const Model> m) : model(std::move(m)), graph(model->impl()) {}
  std::shared_ptr<const Model> model;  // keeps the weights the graph reads alive
  model::DecoderGraph graph;
  GenerateStats stats;
  std::optional<GemmTuneReport> tune;
};

GenerateOptions GenerateOptions::defaults(const ModelConfig& c) {
  GenerateOptions o;
  if (!c.hugging_face) {
    o.max_new_tokens = std::min<uint32_t>(o.max_new_tokens, c.max_position);
    return o;
  }
  const GenerationDefaults& g = c.generation;
  o.beam = g.num_beams;
  o.num_return_sequences = g.num_return_sequences;
  o.length_penalty = g.length_penalty;
  o.early_stopping = g.early_stopping;
  // HF's max_length counts the start token (a decoder-only model's: its prompt, which
  // defaults(config, longest_prompt) takes off); at most 64 new tokens otherwise.
  o.max_new_tokens = c.kind == ModelKind::DecoderOnly ? std::min<uint32_t>(64, c.max_position)
                                                      : std::min(g.max_length, c.max_position + 1) - 1;
  o.min_length = g.min_length;
  o.min_new_tokens = g.min_new_tokens;
  if (g.do_sample) o.temperature = g.temperature, o.top_k = g.top_k, o.top_p = g.top_p;
  o.no_repeat_ngram_size = g.no_repeat_ngram_size;
  o.bad_words_ids = g.bad_words_ids;
  o.forced_bos_id = g.forced_bos_id;
  o.forced_eos_id = g.forced_eos_id;
  o.repetition_penalty = g.repetition_penalty;
  return o;
}

GenerateOptions GenerateOptions::defaults(const ModelConfig& c, size_t longest_prompt) {
  GenerateOptions o = defaults(c);
  // P prompt tokens and N new ones use P + N - 1 positions (the last is never fed back).
  if (c.kind == ModelKind::DecoderOnly && c.generation.max_length_given && longest_prompt >= 1)  // transformers' max_length: prompt included
    o.max_new_tokens = c.generation.max_length > longest_prompt ? uint32_t(c.generation.max_length - longest_prompt) : 1;
  if (c.kind == ModelKind::DecoderOnly && longest_prompt >= 1 && longest_prompt <= c.max_position)
    o.max_new_tokens = std::min<uint32_t>(o.max_new_tokens, uint32_t(c.max_position - longest_prompt + 1));
  return o;
}

namespace {
std::shared_ptr<const Model> generating(std::shared_ptr<const Model> model) {
  if (!model) throw Error("Session: no model");
  if (model->config().kind == ModelKind::EncoderOnly)
    throw Error("Session: model '" + model->config().architecture + "' is encoder-only and generates nothing: Encoder runs it",
                ErrorKind::InvalidInput);
  return model;
}
}  // namespace

Session::Session(std::shared_ptr<const Model> model) : impl_(std::make_unique<Impl>(generating(std::move(model)))) {}
Session::~Session() = default;
Session::Session(Session&&) noexcept = default;

const GenerateStats& Session::last_stats() const { return impl_->stats; }
const Model& Session::model() const { return *impl_->model; }

void Session::warmup() { warmup(WarmupOptions{}); }

const std::optional<GemmTuneReport>& Session::last_tune() const { return impl_->tune; }

void Session::warmup(const WarmupOptions& options) {
  const ModelConfig& c = impl_->model->config();
  impl_->tune.reset();
  if (!(options.tune_budget_s >= 0) || !std::isfinite(options.tune_budget_s))
    throw Error("warmup: tune_budget_s must be a finite number of seconds, 0 or more");
  if (options.tune_budget_s > 0) {
    Context& ctx = impl_->model->impl().ctx;
    const DType precision = impl_->model->precision();
    if (ctx.cache_dir().empty())
      ctx.log(LogLevel::Warning, "warmup: the disk cache is off, so the GEMM variants are not tuned (a tuning file "
                                 "would have nowhere to go)");
    else if (!load_gemm_tuning(ctx, precision))
      impl_->tune = tune_gemm(ctx, {.precision = precision,
                                    .budget_s = options.tune_budget_s,
                                    .shapes = gemm_tuning_shapes(c.d_model, c.dim_feedforward),
                                    .seconds_per_timing = 0.05,
                                    .attention_heads = c.nhead,
                                    .attention_head_dim = c.head_dim(),
                                    .attention_lengths = attention_tuning_lengths(c.max_position)});
  }
  // A source long enough for the tiled GEMMs (more rows than the decode-step kernel
  // takes), of a token that is not padding; two greedy steps, then the host-stepped path.
  const uint32_t id = c.src_vocab_size > 1 ? (c.pad_id + 1) % c.src_vocab_size : 0;
  // (A decoder-only model's prompt and new tokens share its positions: P + steps - 1.)
  const uint32_t steps = std::min<uint32_t>(2, c.max_position);
  const uint32_t length = c.kind == ModelKind::DecoderOnly ? std::min<uint32_t>(8, c.max_position + 1 - steps) : std::min<uint32_t>(8, c.max_position);
  const std::vector<uint32_t> source(length, id);
  generate({source}, {.max_new_tokens = steps, .stop_at_eos = false, .submit_budget_ms = 0});
  generate({source}, {.max_new_tokens = steps, .temperature = 1.0f, .stop_at_eos = false});
  // A beam search: decode steps of 2 to 4 rows (beams, or batched sources) have their own
  // GEMM variant (one row has another). Decoder-only models have no beam search yet.
  if (c.kind != ModelKind::DecoderOnly) generate({source}, {.max_new_tokens = steps, .beam = 2, .stop_at_eos = false});
}

void Session::set_profile(bool on) { impl_->graph.profile = on; }

std::string Session::profile_report() const {
  const model::DecoderGraph& g = impl_->graph;
  if (impl_->model->config().kind == ModelKind::DecoderOnly)  // no encoder: the prompt pass instead
    return "prompt pass (every prompt token but each last):\n" +
           (g.prompt_report.empty() ? std::string("  none: one-token prompts, read by the first step\n") : g.prompt_report) +
           "\nlast decoder step:\n" + g.decoder_report;
  return "encoder:\n" + g.encoder_report + "\nlast decoder step:\n" + g.decoder_report;
}

std::vector<float> Session::score(const std::vector<uint32_t>& ids) {
  const ModelConfig& c = impl_->model->config();
  if (c.kind != ModelKind::DecoderOnly)
    fail_invalid_input("score: model '" + c.architecture + "' is an encoder-decoder: give a source and a target");
  model::check_prompt(c, ids, 0, 0);
  model::DecoderGraph& g = impl_->graph;
  g.submit_budget_ms = GenerateOptions{}.submit_budget_ms;
  g.begin_prompts(1, uint32_t(ids.size()));
  std::vector<float> logits = g.decode(0, uint32_t(ids.size()), ids);  // [n, V]
  for (size_t i = 0; i < logits.size(); ++i)  // an overflow is an error, not logits to rank
    if (!std::isfinite(logits[i]))
      throw Error("score: the logits at position " + std::to_string(i / c.tgt_vocab_size) +
                  " are not finite numbers (NaN or infinity): the model's activations overflowed" +
                  (g.precision() == DType::F16 ? " fp16's range (65504); run it in fp32 (--precision fp32)" : ""));
  return logits;
}

std::vector<float> Session::score(const std::vector<uint32_t>& src, const std::vector<uint32_t>& tgt) {
  if (tgt.empty()) fail_invalid_input("score: the target is empty (it starts with BOS)");
  return score(std::vector<std::vector<uint32_t>>{src}, std::vector<std::vector<uint32_t>>{tgt})[0];
}

std::vector<std::vector<float>> Session::score(const std::vector<std::vector<uint32_t>>& sources,
                                               const std::vector<std::vector<uint32_t>>& targets) {
  if (sources.size() != targets.size())
    fail_invalid_input("score: " + std::to_string(sources.size()) + " sources but " + std::to_string(targets.size()) + " targets");
  if (sources.empty()) return {};
  if (impl_->model->config().kind == ModelKind::DecoderOnly)
    fail_invalid_input("score: model '" + impl_->model->config().architecture + "' is decoder-only: score its token ids alone");
  size_t longest = 0;
  for (size_t i = 0; i < targets.size(); ++i) {
    if (targets[i].empty()) fail_invalid_input("score: target " + std::to_string(i) + " is empty (it starts with BOS)");
    longest = std::max(longest, targets[i].size());
  }
  model::DecoderGraph& g = impl_->graph;
  const uint32_t T = uint32_t(longest), V = impl_->model->config().tgt_vocab_size;
  g.submit_budget_ms = GenerateOptions{}.submit_budget_ms;
  g.encode(sources, 1, T);
  // Targets padded at the end: decoding is causal, so padding never reaches the rows kept.
  std::vector<uint32_t> ids(sources.size() * T, impl_->model->config().bos_id);
  for (size_t i = 0; i < targets.size(); ++i) std::copy(targets[i].begin(), targets[i].end(), ids.begin() + i * T);
  const std::vector<float> logits = g.decode(0, T, ids);  // [B * T, V]
  std::vector<std::vector<float>> out(targets.size());
  for (size_t i = 0; i < targets.size(); ++i)
    out[i].assign(logits.begin() + i * T * V, logits.begin() + (i * T + targets[i].size()) * V);
  return out;
}

std::vector<std::vector<uint32_t>> Session::generate(const std::vector<std::vector<uint32_t>>& sources,
                                                     const GenerateOptions& o) {
  const ModelConfig& c = impl_->model->config();
  if (o.max_new_tokens == 0) return std::vector<std::vector<uint32_t>>(sources.size());
  if (!(o.temperature >= 0 && o.temperature <= GenerateOptions::kMaxTemperature))
    fail_invalid_input("generate: temperature must be from 0 (greedy) to " + std::to_string(int(GenerateOptions::kMaxTemperature)) +
                ", got " + std::to_string(o.temperature));
  if (!(o.top_p > 0 && o.top_p <= 1)) fail_invalid_input("generate: top_p must be in (0, 1], got " + std::to_string(o.top_p));
  if (!(o.repetition_penalty > 0 && o.repetition_penalty <= GenerateOptions::kMaxRepetitionPenalty))
    fail_invalid_input("generate: repetition_penalty must be in (0, " + std::to_string(int(GenerateOptions::kMaxRepetitionPenalty)) +
                "] (1: none), got " + std::to_string(o.repetition_penalty));
  if (o.beam == 0 || o.beam > GenerateOptions::kMaxBeam || o.beam > c.tgt_vocab_size)
    fail_invalid_input("generate: beam must be from 1 to " +
                std::to_string(std::min(GenerateOptions::kMaxBeam, c.tgt_vocab_size)) +
                " (the target vocabulary's size caps it), got " + std::to_string(o.beam));
  if (o.top_k > c.tgt_vocab_size)
    fail_invalid_input("generate: top_k " + std::to_string(o.top_k) + " is larger than the target vocabulary (" +
                std::to_string(c.tgt_vocab_size) + "); 0 keeps every token");
  if (!(o.length_penalty >= -10 && o.length_penalty <= 10))
    fail_invalid_input("generate: length_penalty must be from -10 to 10, got " + std::to_string(o.length_penalty));
  if (!(o.submit_budget_ms >= 0 && o.submit_budget_ms <= 1e6))
    fail_invalid_input("generate: submit_budget_ms must be from 0 (no budget) to 1e6");
  if (o.max_steps_per_submit == 0) fail_invalid_input("generate: max_steps_per_submit must be at least 1");
  if (sources.size() > GenerateOptions::kMaxSources)
    fail_invalid_input("generate: " + std::to_string(sources.size()) + " sources in one call, more than " +
                std::to_string(GenerateOptions::kMaxSources) + ": split them into several calls");
  if (c.kind == ModelKind::DecoderOnly)
    for (size_t i = 0; i < sources.size(); ++i) model::check_prompt(c, sources[i], i, o.max_new_tokens);
  if (o.num_return_sequences == 0 || o.num_return_sequences > o.beam)
    fail_invalid_input("generate: num_return_sequences must be from 1 to the beam width (" + std::to_string(o.beam) +
                       "), got " + std::to_string(o.num_return_sequences) +
                       (o.beam == 1 ? ": greedy search returns one output per input" : ""));
  // Positions 0 (BOS) .. max_new_tokens - 1 are fed to the decoder.
  if (c.kind != ModelKind::DecoderOnly && o.max_new_tokens > c.max_position)
    fail_invalid_input("generate: max_new_tokens " + std::to_string(o.max_new_tokens) +
                " needs more positions than the model's max_position " + std::to_string(c.max_position));
  const bool processors = o.min_length || o.min_new_tokens || o.no_repeat_ngram_size || !o.bad_words_ids.empty() ||
                          o.forced_bos_id || o.forced_eos_id || o.early_stopping || o.num_return_sequences > 1;
  if (processors && !c.hugging_face)
    fail_unsupported("generate: min_length, min_new_tokens, no_repeat_ngram_size, bad_words_ids, forced_bos_id, "
                "forced_eos_id, early_stopping and num_return_sequences are Hugging Face generate() settings; model '" +
                c.architecture + "' does not take them");
  if (o.temperature > 0 && o.beam > 1)
    fail_invalid_input("generate: temperature samples and beam searches: vkformer does not sample within a beam");
  for (const auto& bad : o.bad_words_ids)
    if (bad.empty() || std::any_of(bad.begin(), bad.end(), [&](uint32_t id) { return id >= c.tgt_vocab_size; }))
      fail_invalid_input("generate: bad_words_ids holds an empty list or an id outside the vocabulary");
  for (auto id : {o.forced_bos_id, o.forced_eos_id})
    if (id && *id >= c.tgt_vocab_size) fail_invalid_input("generate: a forced token id is outside the target vocabulary");
  for (uint32_t id : o.eos_ids)
    if (id >= c.tgt_vocab_size)
      fail_invalid_input("generate: eos_ids holds " + std::to_string(id) + ", outside the vocabulary of " +
                  std::to_string(c.tgt_vocab_size));
  if (o.beam > 1 && (!o.eos_ids.empty() || o.stop))
    fail_invalid_input("generate: eos_ids and stop end greedy or sampled outputs; beam search ends at the model's EOS only");
  if (o.repetition_penalty != 1.0f && o.beam > 1 && !c.hugging_face)
    fail_unsupported("generate: repetition_penalty with beam search is supported for Hugging Face models only");
  Context& ctx = impl_->model->impl().ctx;
  impl_->graph.submit_budget_ms = o.submit_budget_ms;
  // Greedy and sampled steps penalise on the GPU (continue_greedy_or_sampled sets it);
  // Hugging Face encoder-decoders' processors and beam search run on the host.
  impl_->graph.set_repetition_penalty(1.0f, {});
  const Counters before = ctx.counters();
  const auto started = std::chrono::steady_clock::now();
  std::vector<std::vector<uint32_t>> results;
  double encode_ms = 0, encode_gpu_ms = 0, prompt_ms = 0;
  uint64_t encode_submits = 0;  // the encodes', counted where they are recorded (DecoderGraph::encode)
  if (c.kind == ModelKind::DecoderOnly && o.beam > 1) {
    results = model::hf_continue_beam(impl_->graph, sources, o, &prompt_ms);  // transformers' beam search, on the host
  } else if (c.kind == ModelKind::DecoderOnly && model::needs_hf_host_decoding(o)) {
    results = model::hf_continue(impl_->graph, sources, o, &prompt_ms);  // its processors, on the host
  } else if (c.kind == ModelKind::DecoderOnly) {
    GenerateOptions ends = o;  // the model's other end tokens end an output as EOS does
    if (o.stop_at_eos) ends.eos_ids.insert(ends.eos_ids.end(), c.more_eos_ids.begin(), c.more_eos_ids.end());
    results = model::continue_prompts(impl_->graph, sources, ends, &prompt_ms);  // no encoder: nothing to count there
  } else if (c.hugging_face && o.beam > 1) {
    for (const auto& src : sources) {
      for (auto& r : model::hf_beam(impl_->graph, src, o)) results.push_back(std::move(r));
      encode_ms += impl_->graph.encode_ms;
      encode_submits += impl_->graph.encode_submits;
      encode_gpu_ms += impl_->graph.encode_gpu_ms;
    }
  } else if (c.hugging_face) {
    results = model::hf_greedy(impl_->graph, sources, o);
    encode_ms = impl_->graph.encode_ms;
    encode_submits = impl_->graph.encode_submits;
    encode_gpu_ms = impl_->graph.encode_gpu_ms;
  } else if (o.beam > 1) {
    for (const auto& src : sources) {
      results.push_back(model::decode_beam(impl_->graph, src, o));
      encode_ms += impl_->graph.encode_ms;
      encode_submits += impl_->graph.encode_submits;
      encode_gpu_ms += impl_->graph.encode_gpu_ms;
    }
  } else {
    results = model::decode_greedy_or_sampled(impl_->graph, sources, o);
    encode_ms = impl_->graph.encode_ms;
    encode_submits = impl_->graph.encode_submits;
    encode_gpu_ms = impl_->graph.encode_gpu_ms;
  }
  // Beam search knows its tokens only at the end: the callback gets the best hypothesis then.
  if (o.on_token && o.beam > 1)
    for (size_t i = 0; i < results.size(); ++i)
      for (uint32_t t : results[i]) o.on_token(i, t);
  const Counters after = ctx.counters();
  GenerateStats& st = impl_->stats;
  st = {};
  st.encode_ms = encode_ms;
  st.prompt_ms = prompt_ms;
  st.decode_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count() -
                 encode_ms - prompt_ms;
  for (const auto& r : results) st.tokens += r.size();
  st.decode_tokens = st.tokens;
  if (c.kind == ModelKind::DecoderOnly) {
    for (const auto& p : sources) st.prompt_tokens += p.size();
    for (const auto& r : results) st.decode_tokens -= r.empty() ? 0 : 1;  // each first token: the prompt's
  }
  st.submits = after.submits - before.submits;
  st.recordings = after.recordings - before.recordings;
  st.dispatches = after.dispatches - before.dispatches;
  st.dispatches_per_decoder_layer = impl_->graph.dispatches_per_decoder_layer();
  st.dispatches_per_encoder_layer = impl_->graph.dispatches_per_encoder_layer();
  st.encode_submits = encode_submits;
  st.encode_gpu_ms = encode_gpu_ms;
  return results;
}

}  // namespace vkf
