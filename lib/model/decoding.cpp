// Decoding strategies over a Session: greedy (argmax on the GPU), beam search and
// sampling (on the host, over downloaded logits).
#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "model/session.hpp"

namespace vkf {

namespace {

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

uint32_t sample(const float* logits, uint32_t n, const GenerateOptions& o, std::mt19937_64& rng) {
  std::vector<double> p(n);
  double m = -INFINITY;
  for (uint32_t i = 0; i < n; ++i) m = std::max(m, double(logits[i]) / o.temperature);
  for (uint32_t i = 0; i < n; ++i) p[i] = std::exp(double(logits[i]) / o.temperature - m);
  std::vector<uint32_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return p[a] > p[b]; });
  uint32_t keep = o.top_k ? std::min(o.top_k, n) : n;
  double total = 0;
  for (uint32_t i = 0; i < keep; ++i) total += p[order[i]];
  if (o.top_p < 1.0f) {  // the smallest prefix holding top_p of the (top-k) mass
    double acc = 0;
    for (uint32_t i = 0; i < keep; ++i) {
      acc += p[order[i]] / total;
      if (acc >= o.top_p) {
        keep = i + 1;
        break;
      }
    }
  }
  total = 0;
  for (uint32_t i = 0; i < keep; ++i) total += p[order[i]];
  double r = std::uniform_real_distribution<double>(0, total)(rng);
  for (uint32_t i = 0; i < keep; ++i) {
    r -= p[order[i]];
    if (r <= 0) return order[i];
  }
  return order[keep - 1];
}

}  // namespace

Session::Session(std::shared_ptr<const Model> model) : impl_(std::make_unique<Impl>(std::move(model))) {}
Session::~Session() = default;
Session::Session(Session&&) noexcept = default;

void Session::set_profile(bool on) { impl_->profile = on; }

std::string Session::profile_report() const {
  return "encoder:\n" + impl_->encoder_report + "\nlast decoder step:\n" + impl_->decoder_report;
}

std::vector<float> Session::score(const std::vector<uint32_t>& src, const std::vector<uint32_t>& tgt) {
  if (tgt.empty()) throw Error("score: the target is empty (it starts with BOS)");
  Impl& s = *impl_;
  s.encode({src}, 1, uint32_t(tgt.size()));
  return s.decode(0, uint32_t(tgt.size()), tgt);
}

std::vector<std::vector<uint32_t>> Session::generate(const std::vector<std::vector<uint32_t>>& sources,
                                                     const GenerateOptions& o) {
  Impl& s = *impl_;
  const ModelConfig& c = s.m.config;
  const uint32_t V = c.tgt_vocab_size;
  if (o.max_new_tokens == 0) return std::vector<std::vector<uint32_t>>(sources.size());
  if (o.temperature < 0 || !(o.top_p > 0 && o.top_p <= 1)) throw Error("generate: temperature must be >= 0 and top_p in (0, 1]");
  // Positions 0 (BOS) .. max_new_tokens - 1 are fed to the decoder.
  if (o.max_new_tokens > c.max_position)
    throw Error("generate: max_new_tokens " + std::to_string(o.max_new_tokens) + " needs more positions than the model's max_position " +
                std::to_string(c.max_position));
  const uint32_t capacity = o.max_new_tokens;  // positions 0 (BOS) .. max_new_tokens - 1 are fed

  if (o.beam > 1) {
    std::vector<std::vector<uint32_t>> results;
    for (const auto& src : sources) {
      const uint32_t K = o.beam;
      s.encode({src}, K, capacity);
      struct Hyp {
        std::vector<uint32_t> ids;
        double score;
      };
      std::vector<Hyp> live = {{{}, 0.0}}, finished;
      for (uint32_t t = 0; t < o.max_new_tokens; ++t) {
        std::vector<uint32_t> feed(K, c.bos_id);
        for (uint32_t k = 0; k < live.size(); ++k)
          if (!live[k].ids.empty()) feed[k] = live[k].ids.back();
        std::vector<float> logits;
        s.step(t, feed, &logits);
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
      results.push_back(best->ids);
    }
    return results;
  }

  // Greedy or sampling, the whole batch together; each sequence stops at its own EOS.
  s.encode(sources, 1, capacity);
  const uint32_t B = uint32_t(sources.size());
  std::vector<std::vector<uint32_t>> out(B);
  std::vector<bool> done(B, false);
  std::vector<uint32_t> feed(B, c.bos_id);
  std::mt19937_64 rng(o.seed);
  for (uint32_t t = 0; t < o.max_new_tokens; ++t) {
    const bool sampling = o.temperature > 0;
    std::vector<float> logits;
    std::vector<uint32_t> next = s.step(t, feed, sampling ? &logits : nullptr);
    if (sampling) {
      next.clear();
      for (uint32_t b = 0; b < B; ++b) next.push_back(sample(logits.data() + uint64_t(b) * V, V, o, rng));
    }
    for (uint32_t b = 0; b < B; ++b) {
      if (done[b]) continue;
      out[b].push_back(next[b]);
      done[b] = o.stop_at_eos && next[b] == c.eos_id;
    }
    if (std::all_of(done.begin(), done.end(), [](bool d) { return d; })) break;
    for (uint32_t b = 0; b < B; ++b) feed[b] = done[b] ? c.eos_id : next[b];
  }
  return out;
}

}  // namespace vkf
