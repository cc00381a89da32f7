#include "host_sampling.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <numeric>

namespace vkf::model {

namespace {

// Philox4x32-10, as shaders/philox.glsl computes it (tests/ops/sample_test.cpp checks the
// published known answers).
std::array<uint32_t, 4> philox4x32_10(std::array<uint32_t, 4> c, std::array<uint32_t, 2> k) {
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = uint64_t(0xD2511F53u) * c[0], p1 = uint64_t(0xCD9E8D57u) * c[2];
    c = {uint32_t(p1 >> 32) ^ c[1] ^ k[0], uint32_t(p1), uint32_t(p0 >> 32) ^ c[3] ^ k[1], uint32_t(p0)};
    k = {k[0] + 0x9E3779B9u, k[1] + 0xBB67AE85u};
  }
  return c;
}

}  // namespace

uint32_t sample_scores(std::vector<double> scores, const GenerateOptions& o, uint32_t row, uint32_t step) {
  const size_t V = scores.size();
  for (double& s : scores) s /= o.temperature;  // TemperatureLogitsWarper
  // Tokens by score, larger first (the lower index first on ties).
  std::vector<uint32_t> order(V);
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return scores[a] > scores[b]; });
  if (o.top_k > 0 && o.top_k < V) {  // TopKLogitsWarper: scores below the k-th's are dropped
    const double kth = scores[order[o.top_k - 1]];
    for (double& s : scores)
      if (s < kth) s = -INFINITY;
  }
  const double top = scores[order[0]];
  std::vector<double> w(V);
  double total = 0;
  for (size_t i = 0; i < V; ++i) total += w[i] = std::isfinite(scores[i]) ? std::exp(scores[i] - top) : 0.0;
  if (o.top_p < 1.0f) {  // TopPLogitsWarper: drop a token once the ones above it hold top_p
    double above = 0;
    for (size_t r = 0; r < V; ++r) {
      const uint32_t t = order[r];
      const double p = w[t] / total;
      if (r > 0 && above >= o.top_p) w[t] = 0;  // (the most likely always stays)
      above += p;
    }
    total = std::accumulate(w.begin(), w.end(), 0.0);
  }
  // The draw: the GPU sampler's uniform number, the kept mass walked in index order.
  const uint32_t h = philox4x32_10({row, step, 0, 0}, {uint32_t(o.seed), uint32_t(o.seed >> 32)})[0];
  const double r = double(h >> 8) / 16777216.0 * total;
  double sum = 0;
  uint32_t last = 0;
  for (uint32_t t = 0; t < V; ++t) {
    if (w[t] <= 0) continue;
    sum += w[t];
    last = t;
    if (sum > r) return t;
  }
  return last;
}

}  // namespace vkf::model
