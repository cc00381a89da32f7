#include "hf_decoding.hpp"

#include <algorithm>
#include <cmath>
#include <map>

namespace vkf::model {

namespace {

constexpr double kBanned = -INFINITY;

// Hugging Face's logits processors, in generate()'s order, over one row of scores for a
// sequence `seq` (the start token first; its length is HF's cur_len). max_length counts
// the start token.
void process(std::vector<double>& scores, const std::vector<uint32_t>& seq, const GenerateOptions& o, uint32_t eos,
             uint32_t max_length) {
  const size_t cur_len = seq.size();
  if (o.repetition_penalty != 1.0f) {  // RepetitionPenaltyLogitsProcessor: every token of seq once
    std::vector<uint32_t> seen(seq);
    std::sort(seen.begin(), seen.end());
    seen.erase(std::unique(seen.begin(), seen.end()), seen.end());
    for (uint32_t t : seen) {
      // transformers computes in the logits' float32
      const float sc = float(scores[t]);
      scores[t] = sc < 0 ? sc * o.repetition_penalty : sc / o.repetition_penalty;
    }
  }
  const uint32_t n = o.no_repeat_ngram_size;
  if (n > 0 && cur_len + 1 >= n) {  // ban what would repeat an n-gram already in seq
    const std::vector<uint32_t> prefix(seq.end() - (n - 1), seq.end());
    for (size_t i = 0; i + n <= cur_len; ++i)
      if (std::equal(prefix.begin(), prefix.end(), seq.begin() + i)) scores[seq[i + n - 1]] = kBanned;
  }
  for (const auto& bad : o.bad_words_ids) {
    if (bad.size() == 1 && bad[0] == eos) continue;  // HF never bans EOS through bad_words_ids
    if (bad.size() - 1 > cur_len) continue;
    if (std::equal(bad.begin(), bad.end() - 1, seq.end() - (bad.size() - 1))) scores[bad.back()] = kBanned;
  }
  if (cur_len < o.min_length) scores[eos] = kBanned;
  auto force = [&](uint32_t id) {
    std::fill(scores.begin(), scores.end(), kBanned);
    scores[id] = 0;
  };
  if (o.forced_bos_id && cur_len == 1) force(*o.forced_bos_id);
  if (o.forced_eos_id && cur_len == max_length - 1) force(*o.forced_eos_id);
}

// torch.argmax: the first of equal maxima.
uint32_t argmax(const std::vector<double>& v) { return uint32_t(std::max_element(v.begin(), v.end()) - v.begin()); }

// BeamHypotheses: the num_beams best finished hypotheses.
struct Hypotheses {
  uint32_t beams;
  float length_penalty;
  std::vector<std::pair<double, std::vector<uint32_t>>> list;  // score, tokens (start token first)
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

  bool done(double best_sum_logprobs, size_t cur_len, int early_stopping, uint32_t max_length) const {
    if (list.size() < beams) return false;
    if (early_stopping == 1) return true;
    // cur_len counts the candidate token and the start token: cur_len - 1 generated tokens.
    const double length = early_stopping == -1 && length_penalty > 0 ? max_length - 1.0 : double(cur_len - 1);
    return worst >= best_sum_logprobs / std::pow(length, length_penalty);
  }
};

}  // namespace

std::vector<std::vector<uint32_t>> hf_greedy(DecoderGraph& g, const std::vector<std::vector<uint32_t>>& sources,
                                             const GenerateOptions& o) {
  const ModelConfig& c = g.config();
  const uint32_t V = c.tgt_vocab_size, B = uint32_t(sources.size()), max_length = o.max_new_tokens + 1;
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
      check_finite(g, std::vector<float>(logits.begin() + uint64_t(b) * V, logits.begin() + uint64_t(b + 1) * V), t);
      std::vector<double> scores(logits.begin() + uint64_t(b) * V, logits.begin() + uint64_t(b + 1) * V);
      process(scores, seqs[b], o, c.eos_id, max_length);
      seqs[b].push_back(argmax(scores));
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

std::vector<uint32_t> hf_beam(DecoderGraph& g, const std::vector<uint32_t>& source, const GenerateOptions& o) {
  const ModelConfig& c = g.config();
  const uint32_t V = c.tgt_vocab_size, K = o.beam, max_length = o.max_new_tokens + 1;
  g.encode({source}, K, o.max_new_tokens);
  std::vector<std::vector<uint32_t>> beams(K, {c.bos_id});
  std::vector<double> beam_scores(K, -1e9);
  beam_scores[0] = 0;  // every beam starts as the same sequence: only the first one counts
  Hypotheses hyps{K, o.length_penalty, {}};
  bool done = false;
  std::vector<float> logits;
  for (uint32_t t = 0; t < o.max_new_tokens && !done; ++t) {
    check_cancel(o);
    std::vector<uint32_t> feed(K);
    for (uint32_t k = 0; k < K; ++k) feed[k] = beams[k].back();
    g.step(t, feed, &logits);
    check_finite(g, logits, t);
    std::vector<std::pair<double, uint32_t>> cand;  // score, k * V + token
    cand.reserve(uint64_t(K) * V);
    for (uint32_t k = 0; k < K; ++k) {
      std::vector<double> scores = log_softmax(logits.data() + uint64_t(k) * V, V);
      process(scores, beams[k], o, c.eos_id, max_length);
      for (uint32_t v = 0; v < V; ++v) cand.emplace_back(beam_scores[k] + scores[v], k * V + v);
    }
    const size_t top = std::min<size_t>(2 * K, cand.size());
    std::partial_sort(cand.begin(), cand.begin() + long(top), cand.end(), [](const auto& a, const auto& b) {
      return a.first > b.first || (a.first == b.first && a.second < b.second);
    });
    const size_t cur_len = beams[0].size() + 1;  // HF's: with the token being chosen
    std::vector<std::vector<uint32_t>> next;
    std::vector<double> next_scores;
    std::vector<uint32_t> parent;
    for (size_t rank = 0; rank < top && next.size() < K; ++rank) {
      const uint32_t k = cand[rank].second / V, v = cand[rank].second % V;
      if (v == c.eos_id) {
        if (rank < K) hyps.add(beams[k], cand[rank].first, cur_len - 1);  // stored without its EOS
        continue;
      }
      next.push_back(beams[k]);
      next.back().push_back(v);
      next_scores.push_back(cand[rank].first);
      parent.push_back(k);
    }
    if (next.size() < K) throw Error("beam search: fewer live candidates than beams (a vocabulary of EOS alone?)");
    done = hyps.done(cand[0].first, cur_len, o.early_stopping, max_length);
    beams = std::move(next);
    beam_scores = std::move(next_scores);
    if (!done && t + 1 < o.max_new_tokens) g.reorder(parent, t + 1);
  }
  if (!done)
    for (uint32_t k = 0; k < K; ++k) hyps.add(beams[k], beam_scores[k], beams[k].size() - 1);
  // The best: the highest score, the last added of equal ones (Python's stable sort, then pop()).
  size_t best = 0;
  for (size_t i = 1; i < hyps.list.size(); ++i)
    if (hyps.list[i].first >= hyps.list[best].first) best = i;
  std::vector<uint32_t> out(hyps.list[best].second.begin() + 1, hyps.list[best].second.end());
  if (hyps.list[best].second.size() < max_length) out.push_back(c.eos_id);
  return out;
}

}  // namespace vkf::model
