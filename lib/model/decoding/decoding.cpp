// Decoding strategies: greedy and sampling (the token chosen on the GPU, many steps per
// submit) and beam search (ranked on the host, over downloaded logits).
#include "decoding.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>

namespace vkf::model {

void check_cancel(const GenerateOptions& o) {
  if (o.cancel && o.cancel->load(std::memory_order_relaxed)) throw Cancelled();
}

// Logits that are NaN or infinite: the activations overflowed (in fp16 storage, past
// 65504), and no token can be chosen from them.
[[noreturn]] void throw_not_finite(const DecoderGraph& s, size_t output, size_t token) {
  throw Error("generate: output " + std::to_string(output) + "'s logits for new token " + std::to_string(token) +
              " are not finite numbers (NaN or infinity): the model's activations overflowed" +
              (s.precision() == DType::F16 ? " fp16's range (65504); run it in fp32 (--precision fp32)" : ""));
}

void check_finite(const DecoderGraph& s, const std::vector<float>& logits, size_t token) {
  const uint32_t V = s.config().tgt_vocab_size;
  for (size_t i = 0; i < logits.size(); ++i)
    if (!std::isfinite(logits[i])) throw_not_finite(s, i / V, token);
}

std::vector<double> log_softmax(const float* logits, uint32_t n) {
  double m = -INFINITY;
  for (uint32_t i = 0; i < n; ++i) m = std::max(m, double(logits[i]));
  double s = 0;
  for (uint32_t i = 0; i < n; ++i) s += std::exp(double(logits[i]) - m);
  const double lse = m + std::log(s);
  std::vector<double> out(n);
  for (uint32_t i = 0; i < n; ++i) out[i] = double(logits[i]) - lse;
  return out;
}

std::vector<uint32_t> decode_beam(DecoderGraph& s, const std::vector<uint32_t>& src, const GenerateOptions& o) {
  const ModelConfig& c = s.config();
  const uint32_t V = c.tgt_vocab_size, K = o.beam;
  s.encode({src}, K, o.max_new_tokens);
  struct Hyp {
    std::vector<uint32_t> ids;
    double score;
  };
  std::vector<Hyp> live = {{{}, 0.0}}, finished;
  for (uint32_t t = 0; t < o.max_new_tokens; ++t) {
    check_cancel(o);
    std::vector<uint32_t> feed(K, c.bos_id);
    for (uint32_t k = 0; k < live.size(); ++k)
      if (!live[k].ids.empty()) feed[k] = live[k].ids.back();
    std::vector<float> logits;
    s.step(t, feed, &logits);
    check_finite(s, std::vector<float>(logits.begin(), logits.begin() + uint64_t(live.size()) * V), t);
    // Rank every (beam, token) continuation of the live beams; ties: lower flat index.
    std::vector<std::pair<double, uint32_t>> cand;
    for (uint32_t k = 0; k < live.size(); ++k) {
      auto lp = log_softmax(logits.data() + uint64_t(k) * V, V);
      for (uint32_t v = 0; v < V; ++v) cand.push_back({live[k].score + lp[v], k * V + v});
    }
    const size_t top = std::min<size_t>(K, cand.size());
    std::partial_sort(cand.begin(), cand.begin() + long(top), cand.end(), [](auto& a, auto& b) {
      return a.first > b.first || (a.first == b.first && a.second < b.second);
    });
    std::vector<Hyp> next;
    std::vector<uint32_t> parent;
    for (size_t i = 0; i < top; ++i) {
      const uint32_t k = cand[i].second / V, v = cand[i].second % V;
      Hyp h{live[k].ids, cand[i].first};
      h.ids.push_back(v);
      if (v == c.eos_id) {
        finished.push_back({h.ids, h.score / std::pow(double(h.ids.size()), o.length_penalty)});
      } else {
        next.push_back(h);
        parent.push_back(k);
      }
    }
    live = std::move(next);
    if (finished.size() >= K || live.empty()) break;
    while (parent.size() < K) parent.push_back(parent.empty() ? 0 : parent[0]);
    s.reorder(parent, t + 1);
  }
  for (auto& h : live) finished.push_back({h.ids, h.score / std::pow(double(h.ids.size()), o.length_penalty)});
  auto best = std::max_element(finished.begin(), finished.end(), [](auto& a, auto& b) { return a.score < b.score; });
  return best->ids;
}

bool ends_output(const GenerateOptions& o, const ModelConfig& c, size_t output, const std::vector<uint32_t>& tokens) {
  const uint32_t last = tokens.back();
  if (o.stop_at_eos && (last == c.eos_id || std::find(o.eos_ids.begin(), o.eos_ids.end(), last) != o.eos_ids.end()))
    return true;
  return o.stop && o.stop(output, tokens);
}

namespace {

// Greedy or sampled steps from position t0, where `feed` holds each sequence's input
// token; the cache holds positions [0, t0) already. Per sequence: the tokens chosen,
// EOS included when produced.
// `first_step` (when given) is called once the first step's tokens are known.
std::vector<std::vector<uint32_t>> continue_greedy_or_sampled(DecoderGraph& s, uint32_t t0, std::vector<uint32_t> feed,
                                                              const GenerateOptions& o, size_t first_output = 0,
                                                              const std::vector<std::vector<uint32_t>>& seen = {},
                                                              const std::function<void()>& first_step = {}) {
  const ModelConfig& c = s.config();
  const uint32_t B = uint32_t(feed.size());
  s.set_repetition_penalty(o.repetition_penalty, seen);
  std::vector<std::vector<uint32_t>> out(B);
  std::vector<bool> done(B, false);
  // Takes one step's tokens; true when every sequence is done.
  auto take = [&](const std::vector<uint32_t>& next) {
    for (uint32_t b = 0; b < B; ++b) {
      if (done[b]) continue;
      if (next[b] & Ops::kNonFiniteToken) throw_not_finite(s, first_output + b, out[b].size());
      out[b].push_back(next[b]);
      if (o.on_token) o.on_token(first_output + b, next[b]);
      done[b] = ends_output(o, c, first_output + b, out[b]);
    }
    return std::all_of(done.begin(), done.end(), [](bool d) { return d; });
  };

  // The token choice: argmax, or a draw from softmax(logits / T) cut to top-k and top-p
  // whose uniform number is a hash of (seed, sequence, position) - the same tokens
  // however the steps are grouped into submits.
  std::optional<Sampling> sampling;
  if (o.temperature > 0) sampling = Sampling{.temperature = o.temperature, .top_k = o.top_k, .top_p = o.top_p, .seed = o.seed};
  if (!s.profile) {
    // Steps run on the GPU, n per submit, n doubling within the time budget.
    s.start_steps(t0, feed, o.stop_at_eos, sampling);
    const uint32_t most = std::max<uint32_t>(1, o.max_steps_per_submit);
    uint32_t t = 0, n = 1;
    while (t < o.max_new_tokens) {
      check_cancel(o);
      n = std::min(n, o.max_new_tokens - t);
      const auto started = std::chrono::steady_clock::now();
      const auto rows = s.run_steps(n);
      if (t == 0 && first_step) first_step();
      const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
      t += n;
      bool finished = false;
      for (const auto& row : rows) finished = finished || take(row);  // steps past the last EOS are dropped
      if (finished) break;
      uint32_t next_n = std::min(2 * n, most);
      if (o.submit_budget_ms > 0) next_n = std::min<uint32_t>(next_n, uint32_t(std::max(1.0, o.submit_budget_ms / (ms / n))));
      n = std::max<uint32_t>(1, next_n);
    }
    return out;
  }

  // Profiled: one step per submit, so the report times one step's dispatches.
  for (uint32_t t = 0; t < o.max_new_tokens; ++t) {
    check_cancel(o);
    const std::vector<uint32_t> next = s.step(t0 + t, feed, nullptr, sampling);
    if (t == 0 && first_step) first_step();
    if (take(next)) break;
    for (uint32_t b = 0; b < B; ++b) feed[b] = done[b] ? c.eos_id : next[b];
  }
  return out;
}

}  // namespace

std::vector<std::vector<uint32_t>> decode_greedy_or_sampled(DecoderGraph& s,
                                                            const std::vector<std::vector<uint32_t>>& sources,
                                                            const GenerateOptions& o) {
  s.encode(sources, 1, o.max_new_tokens);  // positions 0 (BOS) .. max_new_tokens - 1 are fed
  return continue_greedy_or_sampled(s, 0, std::vector<uint32_t>(sources.size(), s.config().bos_id), o);
}

std::vector<std::vector<uint32_t>> continue_prompts(DecoderGraph& s, const std::vector<std::vector<uint32_t>>& prompts,
                                                    const GenerateOptions& o, double* prompt_ms) {
  const auto started = std::chrono::steady_clock::now();
  const ModelConfig& c = s.config();
  for (size_t i = 0; i < prompts.size(); ++i) check_prompt(c, prompts[i], i, o.max_new_tokens);
  const uint32_t B = uint32_t(prompts.size());
  if (o.max_new_tokens == 0 || B == 0) return std::vector<std::vector<uint32_t>>(B);
  // One batch, every prompt left-padded to the longest (DecoderGraph::set_left_padding):
  // positions 0 .. P - 2 in one pass, then steps from each prompt's last token at row
  // P - 1, the first step's logits predicting the first new token; every choice (argmax
  // or a draw keyed by its row) is the GPU's, as for an encoder-decoder.
  uint32_t P = 0;
  for (const auto& p : prompts) P = std::max(P, uint32_t(p.size()));
  s.begin_prompts(B, P - 1 + o.max_new_tokens);
  std::vector<uint32_t> pads(B), ids, feed(B);
  for (uint32_t b = 0; b < B; ++b) {
    const auto& p = prompts[b];
    pads[b] = P - uint32_t(p.size());
    ids.insert(ids.end(), pads[b], 0u);  // padding: any id (masked as a key, never predicted from)
    ids.insert(ids.end(), p.begin(), p.end() - 1);
    feed[b] = p.back();
  }
  s.set_left_padding(pads, P - 1);
  if (P > 1) s.prefill(0, P - 1, ids);
  auto first_step = [&] {
    if (prompt_ms) *prompt_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
  };
  // The prompts count as seen by the repetition penalty, as generate() holds them: left-
  // padded with the pad id (transformers' input_ids), which a padded prompt so penalises too.
  std::vector<std::vector<uint32_t>> seen(prompts);
  if (c.pad_id < c.tgt_vocab_size)
    for (uint32_t b = 0; b < B; ++b) seen[b].insert(seen[b].begin(), pads[b], c.pad_id);
  return continue_greedy_or_sampled(s, P - 1, feed, o, 0, seen, first_step);
}

void check_prompt(const ModelConfig& c, const std::vector<uint32_t>& prompt, size_t index, uint32_t new_tokens) {
  const std::string which = "prompt " + std::to_string(index);
  if (prompt.empty()) fail_invalid_input(which + " is empty (a decoder-only model continues at least one token)");
  for (uint32_t id : prompt)
    if (id >= c.tgt_vocab_size)
      fail_invalid_input(which + " has token id " + std::to_string(id) + ", outside the vocabulary of " +
                  std::to_string(c.tgt_vocab_size));
  // The last new token is never fed back, so P + N - 1 positions are used.
  if (uint64_t(prompt.size()) + new_tokens - (new_tokens ? 1 : 0) > c.max_position)
    fail_invalid_input(which + " has " + std::to_string(prompt.size()) + " tokens" +
                (new_tokens ? " and " + std::to_string(new_tokens) + " new ones need " +
                                  std::to_string(prompt.size() + new_tokens - 1) + " positions"
                            : "") +
                ", more than the model's " + std::to_string(c.max_position) + " (n_positions)");
}

}  // namespace vkf::model
