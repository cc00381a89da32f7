// sample: tokens drawn on the GPU from softmax(logits / T) cut to top-k and top-p. The
// reference is the distribution itself, computed in double the way the host sampler
// does; many draws (one per row and step) are checked against it with a chi-square test.
#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

#include "support/ops_test.hpp"

namespace vkf::test {
namespace {

class SampleTest : public OpsTest {
 protected:
  // Draws for `rows` copies of one row of logits at each of `steps` steps.
  std::vector<uint32_t> draw(const std::vector<double>& logits, const Sampling& s, uint32_t rows, uint32_t steps) {
    const auto cols = uint32_t(logits.size());
    std::vector<double> x;
    for (uint32_t r = 0; r < rows; ++r) x.insert(x.end(), logits.begin(), logits.end());
    Buffer bx = upload_as(ctx(), x, dtype(), "logits"), state = upload_u32(ctx(), {0, 0, 0}, "decode_step");
    std::vector<uint32_t> out;
    for (uint32_t t = 0; t < steps; ++t) {
      Buffer bi = poisoned(ctx(), rows, DType::F32, "sampled");  // unwritten rows fail the range check
      ctx().upload(state, std::vector<uint32_t>{t, 0, 0}.data(), 12);
      auto cl = ctx().command_list();
      Ops o = ops();
      o.sample(cl, s, bx.view(), bi.view(), rows, cols, {state.view(), steps});
      cl.submit();
      const auto got = download_u32(ctx(), bi, rows);
      out.insert(out.end(), got.begin(), got.end());
    }
    return out;
  }
};

// The host sampler's distribution (lib/model/decoding.cpp) in double: tokens ranked by
// probability (ties: lower index first), the first top_k kept, then the shortest prefix
// whose share of their mass reaches top_p. Tokens outside it have probability 0.
std::vector<double> reference(const std::vector<double>& logits, const Sampling& s) {
  const size_t n = logits.size();
  double m = -INFINITY;
  for (double l : logits) m = std::max(m, l / s.temperature);
  std::vector<double> p(n);
  for (size_t i = 0; i < n; ++i) p[i] = std::exp(logits[i] / s.temperature - m);
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return p[a] > p[b]; });
  size_t keep = s.top_k ? std::min<size_t>(s.top_k, n) : n;
  double total = 0;
  for (size_t i = 0; i < keep; ++i) total += p[order[i]];
  if (s.top_p < 1) {
    double acc = 0;
    for (size_t i = 0; i < keep; ++i)
      if ((acc += p[order[i]] / total) >= s.top_p) {
        keep = i + 1;
        break;
      }
  }
  std::vector<double> q(n, 0.0);
  double kept = 0;
  for (size_t i = 0; i < keep; ++i) kept += p[order[i]];
  for (size_t i = 0; i < keep; ++i) q[order[i]] = p[order[i]] / kept;
  return q;
}

// Pearson's chi-square of the counts against q, bins with fewer than 5 expected merged;
// returns {statistic, degrees of freedom}. A draw q calls impossible fails at once.
std::pair<double, int> chi_square(const std::vector<uint32_t>& draws, const std::vector<double>& q) {
  std::vector<double> counts(q.size(), 0.0);
  for (uint32_t d : draws) {
    EXPECT_LT(d, q.size()) << "an index outside the row (an unwritten output?)";
    if (d >= q.size()) return {INFINITY, 1};
    EXPECT_GT(q[d], 0.0) << "token " << d << " drawn, outside the top-k / top-p set";
    counts[d] += 1;
  }
  const double n = double(draws.size());
  double stat = 0, small_observed = 0, small_expected = 0;
  int bins = 0;
  for (size_t i = 0; i < q.size(); ++i) {
    if (q[i] == 0) continue;
    const double e = q[i] * n;
    if (e < 5) {
      small_observed += counts[i];
      small_expected += e;
      continue;
    }
    stat += (counts[i] - e) * (counts[i] - e) / e;
    ++bins;
  }
  if (small_expected > 0) {
    stat += (small_observed - small_expected) * (small_observed - small_expected) / small_expected;
    ++bins;
  }
  return {stat, std::max(bins - 1, 1)};
}

// The chi-square quantile at 1 - 1e-6 (Wilson-Hilferty): a correct sampler fails one
// run in a million per case, while a wrong temperature or cut exceeds it many times over.
double critical_value(int df) {
  const double z = 4.753, a = 2.0 / (9.0 * df);
  return df * std::pow(1 - a + z * std::sqrt(a), 3);
}

TEST_P(SampleTest, DrawsFollowSoftmaxWithTopKAndTopP) {
  auto seed = test_seed();
  VKF_SEED_TRACE(seed);
  std::mt19937_64 rng(seed);
  struct Case {
    uint32_t cols;
    Sampling s;
  };
  const Case cases[] = {
      {17, {.temperature = 1}},
      {17, {.temperature = 0.6f, .top_k = 5}},
      {17, {.temperature = 1.5f, .top_p = 0.8f}},
      {3, {.temperature = 1, .top_k = 2, .top_p = 0.9f}},
      {300, {.temperature = 1, .top_k = 12, .top_p = 0.95f}},
      {300, {.temperature = 0.8f, .top_p = 0.5f}},
  };
  for (const auto& [cols, base] : cases) {
    auto logits = random_values(cols, rng, -2.5, 2.5);
    if (cols > 3) logits[cols - 1] = logits[1];  // a tie: ranked by index
    for (auto& l : logits) l = stored(l, dtype());
    Sampling s = base;
    s.seed = rng();
    const auto q = reference(logits, s);
    const auto draws = draw(logits, s, 1000, 2);
    const auto [stat, df] = chi_square(draws, q);
    EXPECT_LT(stat, critical_value(df)) << "cols " << cols << " T " << s.temperature << " top_k " << s.top_k
                                        << " top_p " << s.top_p << ": chi-square " << stat << " on " << df << " df";
  }
}

// The cut itself, exactly: top_k 1 (or a top_p no single token misses) is argmax, the
// first of tied maxima; and whatever the cut, no draw leaves it, at awkward sizes.
TEST_P(SampleTest, CutsAreExactAtAwkwardSizes) {
  auto seed = test_seed();
  VKF_SEED_TRACE(seed);
  std::mt19937_64 rng(seed);
  for (uint32_t cols : {1u, 3u, 17u, 255u, 1000u, 32003u}) {
    auto logits = random_values(cols, rng, -8, 8);
    if (cols > 3) logits[cols / 2] = logits[cols / 3] = 9;  // tied maxima: the lower index is argmax
    for (auto& l : logits) l = stored(l, dtype());
    const uint32_t first = uint32_t(std::max_element(logits.begin(), logits.end()) - logits.begin());
    for (const Sampling s : {Sampling{.temperature = 2, .top_k = 1}, Sampling{.temperature = 0.5f, .top_p = 1e-6f}}) {
      const auto draws = draw(logits, s, 7, 2);
      for (uint32_t d : draws) EXPECT_EQ(d, first) << "cols " << cols << " top_k " << s.top_k << " top_p " << s.top_p;
    }
    const Sampling s{.temperature = 1, .top_k = 5, .top_p = 0.9f, .seed = rng()};
    const auto q = reference(logits, s);
    for (uint32_t d : draw(logits, s, 33, 3)) {
      ASSERT_LT(d, cols) << "unwritten output";
      EXPECT_GT(q[d], 0.0) << "cols " << cols << ": token " << d << " is outside the cut";
    }
  }
}

// The same seed and step give the same tokens; another step or seed draws anew.
TEST_P(SampleTest, SeedAndStepMakeTheDraw) {
  const std::vector<double> flat(64, 0.0);  // uniform: 64 equally likely tokens
  const Sampling s{.temperature = 1, .seed = 42};
  const auto a = draw(flat, s, 256, 2), b = draw(flat, s, 256, 2);
  EXPECT_EQ(a, b);
  const std::vector<uint32_t> step0(a.begin(), a.begin() + 256), step1(a.begin() + 256, a.end());
  EXPECT_NE(step0, step1);
  Sampling other = s;
  other.seed = 43;
  EXPECT_NE(draw(flat, other, 256, 1), step0);
}

TEST_P(SampleTest, BadSettingsAreClearErrors) {
  Buffer x = ctx().buffer(64 * 4), i = ctx().buffer(64), state = upload_u32(ctx(), {0, 0, 0}, "decode_step");
  auto cl = ctx().command_list();
  Ops o = ops();
  const DecodeStep step{state.view(), 1};
  auto message = [&](const Sampling& s, uint32_t rows, uint32_t cols) {
    try {
      o.sample(cl, s, x.view(), i.view(), rows, cols, step);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message({.temperature = 0}, 1, 8).find("temperature"), std::string::npos);
  EXPECT_NE(message({.temperature = 1e-45f}, 1, 8).find("temperature"), std::string::npos);
  EXPECT_NE(message({.temperature = 1, .top_p = 0}, 1, 8).find("top_p"), std::string::npos);
  EXPECT_NE(message({.temperature = 1, .top_p = 1.5f}, 1, 8).find("top_p"), std::string::npos);
  EXPECT_NE(message({.temperature = 1}, 0, 8).find("rows and cols"), std::string::npos);
  EXPECT_NE(message({.temperature = 1}, 1, 1000).find("x needs"), std::string::npos);
  cl.submit();
}

VKF_FOR_EACH_DTYPE(SampleTest);

}  // namespace
}  // namespace vkf::test
