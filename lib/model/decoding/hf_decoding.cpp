#include "hf_decoding.hpp"

#include "host_sampling.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>

namespace vkf::model {

namespace {

constexpr double kBanned = -INFINITY;

// A run of generate(): input_ids' first prompt_len tokens were given (the start token,
// or a padded prompt); max_length = prompt_len + max_new_tokens; the tokens that end an
// output (eos[0]: what a beam hypothesis cut short gets appended).
struct HfRun {
  size_t prompt_len = 1, max_length = 1;
  std::vector<uint32_t> eos;
  bool is_eos(uint32_t t) const { return std::find(eos.begin(), eos.end(), t) != eos.end(); }
};

// Hugging Face's logits processors, in generate()'s order (_get_logits_processor), over
// one row of scores for a sequence `seq` (input_ids: its length is HF's cur_len).
void process(std::vector<double>& scores, const std::vector<uint32_t>& seq, const GenerateOptions& o, const HfRun& run) {
  const size_t cur_len = seq.size(), V = scores.size();
  // (A pad id outside the vocabulary, as a random GPT-2's EOS may be, has no score to change.)
  if (o.repetition_penalty != 1.0f) {  // RepetitionPenaltyLogitsProcessor: every token of seq once
    std::vector<uint32_t> seen(seq);
    std::sort(seen.begin(), seen.end());
    seen.erase(std::unique(seen.begin(), seen.end()), seen.end());
    for (uint32_t t : seen) {
      if (t >= V) continue;
      // transformers computes in the logits' float32
      const float sc = float(scores[t]);
      scores[t] = sc < 0 ? sc * o.repetition_penalty : sc / o.repetition_penalty;
    }
  }
  const uint32_t n = o.no_repeat_ngram_size;
  if (n > 0 && cur_len + 1 >= n) {  // ban what would repeat an n-gram already in seq
    const std::vector<uint32_t> prefix(seq.end() - (n - 1), seq.end());
    for (size_t i = 0; i + n <= cur_len; ++i)
      if (std::equal(prefix.begin(), prefix.end(), seq.begin() + i) && seq[i + n - 1] < V) scores[seq[i + n - 1]] = kBanned;
  }
  for (const auto& bad : o.bad_words_ids) {
    if (bad.size() == 1 && run.is_eos(bad[0])) continue;  // HF never bans an EOS through bad_words_ids
    if (bad.size() - 1 > cur_len) continue;
    if (std::equal(bad.begin(), bad.end() - 1, seq.end() - (bad.size() - 1))) scores[bad.back()] = kBanned;
  }
  auto ban_eos = [&] {
    for (uint32_t e : run.eos)
      if (e < V) scores[e] = kBanned;
  };
  if (cur_len < o.min_length) ban_eos();                           // MinLengthLogitsProcessor
  if (cur_len - run.prompt_len < o.min_new_tokens) ban_eos();      // MinNewTokensLengthLogitsProcessor
  auto force = [&](uint32_t id) {
    std::fill(scores.begin(), scores.end(), kBanned);
    scores[id] = 0;
  };
  if (o.forced_bos_id && cur_len == 1) force(*o.forced_bos_id);
  if (o.forced_eos_id && cur_len == run.max_length - 1) force(*o.forced_eos_id);
}

// Output b's row of a step's logits [outputs, V] as scores; a NaN or infinite logit (an
// fp16 overflow) is an error naming the output and token.
std::vector<double> row_scores(const DecoderGraph& g, const std::vector<float>& logits, uint32_t b, uint32_t V, uint32_t t) {
  std::vector<double> scores(logits.begin() + uint64_t(b) * V, logits.begin() + uint64_t(b + 1) * V);
  for (double s : scores)
    if (!std::isfinite(s)) throw_not_finite(g, b, t);
  return scores;
}

// torch.argmax: the first of equal maxima.
uint32_t argmax(const std::vector<double>& v) { return uint32_t(std::max_element(v.begin(), v.end()) - v.begin()); }

// The next token from processed scores: the argmax, or (temperature > 0) a draw keyed by
// the output's row and the step.
uint32_t choose(const std::vector<double>& scores, const GenerateOptions& o, uint32_t row, uint32_t step) {
  return o.temperature > 0 ? sample_scores(scores, o, row, step) : argmax(scores);
}

// BeamHypotheses: the num_beams best finished hypotheses.
struct Hypotheses {
  uint32_t beams;
  float length_penalty;
  std::vector<std::pair<double, std::vector<uint32_t>>> list;  // score, tokens (input_ids, without the EOS)
  double worst = 1e9;

  void add(std::vector<uint32_t> tokens, double sum_logprobs, size_t generated_len) {
    const double score = sum_logprobs / std::pow(double(generated_len), length_penalty);
    if (list.size() < beams || score > worst) {
      list.emplace_back(score, std::move(tokens));
      if (list.size() > beams) {
        // Drop the lowest (the first of equal scores, as sorting (score, index) does).
        std::vector<std::pair<double, size_t>> order;
        for (size_t i = 0; i < list.size(); ++i) order.emplace_back(list[i].first, i);
        std::sort(order.begin(), order.end());
        list.erase(list.begin() + long(order[0].second));
        worst = order[1].first;
      } else {
        worst = std::min(score, worst);
      }
    }
  }

  // cur_len: input_ids' length with the candidate token.
  bool done(double best_sum_logprobs, size_t cur_len, int early_stopping, const HfRun& run) const {
    if (list.size() < beams) return false;
    if (early_stopping == 1) return true;
    const double length = early_stopping == -1 && length_penalty > 0 ? double(run.max_length - run.prompt_len)
                                                                     : double(cur_len - run.prompt_len);
    return worst >= best_sum_logprobs / std::pow(length, length_penalty);
  }
};

// Beam search from `start` (input_ids as generate() holds them), K = o.beam beams whose
// caches the graph holds: step t feeds each beam's last token at position first + t.
std::vector<std::vector<uint32_t>> beam_search(DecoderGraph& g, const std::vector<uint32_t>& start, uint32_t first,
                                               const GenerateOptions& o, const HfRun& run) {
  const uint32_t V = g.config().tgt_vocab_size, K = o.beam;
  std::vector<std::vector<uint32_t>> beams(K, start);
  std::vector<double> beam_scores(K, -1e9);
  beam_scores[0] = 0;  // every beam starts as the same sequence: only the first one counts
  Hypotheses hyps{K, o.length_penalty, {}};
  bool done = false;
  std::vector<float> logits;
  const size_t top_n = std::max<size_t>(2, 1 + run.eos.size()) * K;
  for (uint32_t t = 0; t < o.max_new_tokens && !done; ++t) {
    check_cancel(o);
    std::vector<uint32_t> feed(K);
    for (uint32_t k = 0; k < K; ++k) feed[k] = beams[k].back();
    g.step(first + t, feed, &logits);
    check_finite(g, logits, t);
    std::vector<std::pair<double, uint32_t>> cand;  // score, k * V + token
    cand.reserve(uint64_t(K) * V);
    for (uint32_t k = 0; k < K; ++k) {
      std::vector<double> scores = log_softmax(logits.data() + uint64_t(k) * V, V);
      process(scores, beams[k], o, run);
      for (uint32_t v = 0; v < V; ++v) cand.emplace_back(beam_scores[k] + scores[v], k * V + v);
    }
    const size_t top = std::min(top_n, cand.size());
    std::partial_sort(cand.begin(), cand.begin() + long(top), cand.end(), [](const auto& a, const auto& b) {
      return a.first > b.first || (a.first == b.first && a.second < b.second);
    });
    const size_t cur_len = beams[0].size() + 1;  // HF's: with the token being chosen
    std::vector<std::vector<uint32_t>> next;
    std::vector<double> next_scores;
    std::vector<uint32_t> parent;
    for (size_t rank = 0; rank < top && next.size() < K; ++rank) {
      const uint32_t k = cand[rank].second / V, v = cand[rank].second % V;
      if (run.is_eos(v)) {
        if (rank < K) hyps.add(beams[k], cand[rank].first, cur_len - run.prompt_len);  // stored without its EOS
        continue;
      }
      next.push_back(beams[k]);
      next.back().push_back(v);
      next_scores.push_back(cand[rank].first);
      parent.push_back(k);
    }
    if (next.size() < K) throw Error("beam search: fewer live candidates than beams (a vocabulary of EOS alone?)");
    done = hyps.done(cand[0].first, cur_len, o.early_stopping, run);
    beams = std::move(next);
    beam_scores = std::move(next_scores);
    if (!done && t + 1 < o.max_new_tokens) g.reorder(parent, first + t + 1);
  }
  if (!done)
    for (uint32_t k = 0; k < K; ++k) hyps.add(beams[k], beam_scores[k], beams[k].size() - run.prompt_len);
  // The best first: Python's stable sort by score, then pop() from the end (the last
  // added of equal scores first).
  std::vector<size_t> order(hyps.list.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return hyps.list[a].first < hyps.list[b].first; });
  std::vector<std::vector<uint32_t>> out;
  for (uint32_t r = 0; r < o.num_return_sequences && !order.empty(); ++r) {
    const auto& tokens = hyps.list[order.back()].second;
    order.pop_back();
    out.emplace_back(tokens.begin() + long(run.prompt_len), tokens.end());
    if (tokens.size() < run.max_length) out.back().push_back(run.eos[0]);
  }
  return out;
}

// The tokens that end a decoder-only model's output (its EOS, a generation config's list).
std::vector<uint32_t> end_tokens(const ModelConfig& c, const GenerateOptions& o) {
  std::vector<uint32_t> eos{c.eos_id};
  for (uint32_t id : c.more_eos_ids) eos.push_back(id);
  (void)o;
  return eos;
}

// Decoder-only prompts as generate() holds them: each left-padded with the pad id to the
// longest (P); the graph reads them unpadded where it can.
uint32_t longest(const std::vector<std::vector<uint32_t>>& prompts) {
  uint32_t P = 0;
  for (const auto& p : prompts) P = std::max(P, uint32_t(p.size()));
  return P;
}

}  // namespace

bool needs_hf_host_decoding(const GenerateOptions& o) {
  return o.beam > 1 || o.min_length || o.min_new_tokens || o.no_repeat_ngram_size || !o.bad_words_ids.empty() ||
         o.forced_bos_id || o.forced_eos_id;
}

std::vector<std::vector<uint32_t>> hf_greedy(DecoderGraph& g, const std::vector<std::vector<uint32_t>>& sources,
                                             const GenerateOptions& o) {
  const ModelConfig& c = g.config();
  const uint32_t V = c.tgt_vocab_size, B = uint32_t(sources.size());
  const HfRun run{1, size_t(o.max_new_tokens) + 1, {c.eos_id}};
  g.encode(sources, 1, o.max_new_tokens);
  std::vector<std::vector<uint32_t>> seqs(B, {c.bos_id});
  std::vector<bool> done(B, false);
  std::vector<float> logits;
  for (uint32_t t = 0; t < o.max_new_tokens; ++t) {
    check_cancel(o);
    std::vector<uint32_t> feed(B);
    for (uint32_t b = 0; b < B; ++b) feed[b] = seqs[b].back();
    g.step(t, feed, &logits);
    bool all_done = true;
    for (uint32_t b = 0; b < B; ++b) {
      if (done[b]) continue;
      std::vector<double> scores = row_scores(g, logits, b, V, t);
      process(scores, seqs[b], o, run);
      seqs[b].push_back(choose(scores, o, b, t));
      if (o.on_token) o.on_token(b, seqs[b].back());
      // EOS first; the tokens after the start token are copied only for a stop test.
      const uint32_t last = seqs[b].back();
      done[b] = (o.stop_at_eos && (last == c.eos_id || std::count(o.eos_ids.begin(), o.eos_ids.end(), last))) ||
                (o.stop && ends_output(o, c, b, std::vector<uint32_t>(seqs[b].begin() + 1, seqs[b].end())));
      all_done = all_done && done[b];
    }
    if (all_done) break;
  }
  for (auto& s : seqs) s.erase(s.begin());
  return seqs;
}

std::vector<std::vector<uint32_t>> hf_beam(DecoderGraph& g, const std::vector<uint32_t>& source, const GenerateOptions& o) {
  const ModelConfig& c = g.config();
  g.encode({source}, o.beam, o.max_new_tokens);
  return beam_search(g, {c.bos_id}, 0, o, HfRun{1, size_t(o.max_new_tokens) + 1, {c.eos_id}});
}

std::vector<std::vector<uint32_t>> hf_continue(DecoderGraph& g, const std::vector<std::vector<uint32_t>>& prompts,
                                               const GenerateOptions& o, double* prompt_ms) {
  const auto started = std::chrono::steady_clock::now();
  const ModelConfig& c = g.config();
  const uint32_t B = uint32_t(prompts.size()), V = c.tgt_vocab_size, P = longest(prompts);
  const HfRun run{P, size_t(P) + o.max_new_tokens, end_tokens(c, o)};
  // The graph as continue_prompts runs it: one left-padded batch, positions 0 .. P - 2 in
  // one pass, then a step per token from each prompt's last.
  g.begin_prompts(B, P - 1 + o.max_new_tokens);
  std::vector<uint32_t> pads(B), ids, feed(B);
  std::vector<std::vector<uint32_t>> seqs(B);  // input_ids
  for (uint32_t b = 0; b < B; ++b) {
    const auto& p = prompts[b];
    pads[b] = P - uint32_t(p.size());
    ids.insert(ids.end(), pads[b], 0u);
    ids.insert(ids.end(), p.begin(), p.end() - 1);
    feed[b] = p.back();
    seqs[b].assign(pads[b], c.pad_id);
    seqs[b].insert(seqs[b].end(), p.begin(), p.end());
  }
  g.set_left_padding(pads, P - 1);
  if (P > 1) g.prefill(0, P - 1, ids);
  std::vector<bool> done(B, false);
  std::vector<float> logits;
  for (uint32_t t = 0; t < o.max_new_tokens; ++t) {
    check_cancel(o);
    g.step(P - 1 + t, feed, &logits);
    if (t == 0 && prompt_ms)
      *prompt_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
    bool all_done = true;
    for (uint32_t b = 0; b < B; ++b) {
      if (done[b]) continue;
      std::vector<double> scores = row_scores(g, logits, b, V, t);
      process(scores, seqs[b], o, run);
      const uint32_t next = choose(scores, o, b, t);
      seqs[b].push_back(next);
      feed[b] = next;
      if (o.on_token) o.on_token(b, next);
      const std::vector<uint32_t> generated(seqs[b].begin() + P, seqs[b].end());
      done[b] = (o.stop_at_eos && (run.is_eos(next) || std::count(o.eos_ids.begin(), o.eos_ids.end(), next))) ||
                (o.stop && ends_output(o, c, b, generated));
      all_done = all_done && done[b];
    }
    if (all_done) break;
  }
  std::vector<std::vector<uint32_t>> out;
  for (const auto& s : seqs) out.emplace_back(s.begin() + P, s.end());
  return out;
}

std::vector<std::vector<uint32_t>> hf_continue_beam(DecoderGraph& g, const std::vector<std::vector<uint32_t>>& prompts,
                                                    const GenerateOptions& o, double* prompt_ms) {
  if (prompt_ms) *prompt_ms = 0;
  const ModelConfig& c = g.config();
  const uint32_t P = longest(prompts), K = o.beam;
  const HfRun run{P, size_t(P) + o.max_new_tokens, end_tokens(c, o)};
  std::vector<std::vector<uint32_t>> out;
  for (const auto& p : prompts) {
    // K copies of the prompt, read unpadded (the model computes it as it would alone).
    const auto started = std::chrono::steady_clock::now();
    const uint32_t n = uint32_t(p.size());
    g.begin_prompts(K, n - 1 + o.max_new_tokens);
    g.set_left_padding(std::vector<uint32_t>(K, 0), n - 1);
    if (n > 1) {
      std::vector<uint32_t> ids;
      for (uint32_t k = 0; k < K; ++k) ids.insert(ids.end(), p.begin(), p.end() - 1);
      g.prefill(0, n - 1, ids);
    }
    if (prompt_ms) *prompt_ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
    std::vector<uint32_t> start(P - n, c.pad_id);  // input_ids: padded as in the batch
    start.insert(start.end(), p.begin(), p.end());
    for (auto& r : beam_search(g, start, n - 1, o, run)) out.push_back(std::move(r));
  }
  return out;
}

}  // namespace vkf::model
