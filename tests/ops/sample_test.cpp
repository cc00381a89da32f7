// sample: tokens drawn on the GPU from softmax(logits / T) cut to top-k and top-p. The
// reference is the distribution itself, computed in double the way the host sampler
// does; many draws (one per row and step) are checked against it with a chi-square test.
#include <algorithm>
#include <array>
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

// The host sampler's distribution (lib/model/decoding/decoding.cpp) in double: tokens ranked by
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

// Philox4x32-10 on the host, the reference for shaders/philox.glsl.
std::array<uint32_t, 4> philox4x32_10(std::array<uint32_t, 4> c, std::array<uint32_t, 2> k) {
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = uint64_t(0xD2511F53u) * c[0], p1 = uint64_t(0xCD9E8D57u) * c[2];
    c = {uint32_t(p1 >> 32) ^ c[1] ^ k[0], uint32_t(p1), uint32_t(p0 >> 32) ^ c[3] ^ k[1], uint32_t(p0)};
    k = {k[0] + 0x9E3779B9u, k[1] + 0xBB67AE85u};
  }
  return c;
}

// The published known answers (Random123's kat_vectors, philox4x32 with 10 rounds).
TEST(Philox, KnownAnswers) {
  using W = std::array<uint32_t, 4>;
  EXPECT_EQ(philox4x32_10({0, 0, 0, 0}, {0, 0}), (W{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}));
  EXPECT_EQ(philox4x32_10({~0u, ~0u, ~0u, ~0u}, {~0u, ~0u}), (W{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}));
  EXPECT_EQ(philox4x32_10({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, {0xa4093822, 0x299f31d0}),
            (W{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}));
}

// The token a draw over 64 equally likely tokens must be: the weights are exactly 1, the
// prefix sums exact integers, so the kernel's r = (h >> 8) / 2^24 * 64 picks h >> 26.
uint32_t flat64_pick(uint64_t seed, uint32_t row, uint32_t step) {
  return philox4x32_10({row, step, 0, 0}, {uint32_t(seed), uint32_t(seed >> 32)})[0] >> 26;
}

// The kernel draws exactly the reference generator's numbers, at seed 0 too (where a
// hash chain once drew r = 0, the lowest kept token, every time).
TEST_P(SampleTest, DrawsAreTheGeneratorsNumbersAtEverySeedRowAndStep) {
  const std::vector<double> flat(64, 0.0);
  for (uint64_t seed : {uint64_t(0), uint64_t(1), uint64_t(0xffffffff00000000ull), ~uint64_t(0)}) {
    const auto got = draw(flat, {.temperature = 1, .seed = seed}, 257, 3);
    for (uint32_t t = 0; t < 3; ++t)
      for (uint32_t r = 0; r < 257; ++r)
        ASSERT_EQ(got[t * 257 + r], flat64_pick(seed, r, t)) << "seed " << seed << " row " << r << " step " << t;
  }
  // Seed 0, row 0, step 0 on a skewed row: the lowest token is nearly impossible.
  std::vector<double> skewed(17, 4.0);
  skewed[0] = -10;
  EXPECT_NE(draw(skewed, {.temperature = 0.8f, .seed = 0}, 1, 1)[0], 0u);
}

// The first step's draws across seeds 0, 1, 2, ... follow the distribution: each seed is
// a fresh stream, not a shifted copy of its neighbour's.
TEST_P(SampleTest, FirstDrawsAcrossSeedsFollowTheDistribution) {
  const auto seed = test_seed();
  VKF_SEED_TRACE(seed);
  std::mt19937_64 rng(seed);
  auto logits = random_values(17, rng, -2.5, 2.5);
  for (auto& l : logits) l = stored(l, dtype());
  Sampling s{.temperature = 0.9f};
  const auto q = reference(logits, s);
  std::vector<uint32_t> draws;
  for (uint64_t seed = 0; seed < 600; ++seed) {
    s.seed = seed;
    draws.push_back(draw(logits, s, 1, 1)[0]);
  }
  const auto [stat, df] = chi_square(draws, q);
  EXPECT_LT(stat, critical_value(df)) << "chi-square " << stat << " on " << df << " df";
  // And the generator's first numbers across 100,000 seeds, in 64 bins.
  std::vector<uint32_t> bins;
  for (uint64_t seed = 0; seed < 100000; ++seed) bins.push_back(flat64_pick(seed, 0, 0));
  const auto [flat_stat, flat_df] = chi_square(bins, std::vector<double>(64, 1.0 / 64));
  EXPECT_LT(flat_stat, critical_value(flat_df)) << "chi-square " << flat_stat << " on " << flat_df << " df";
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

// A row holding a NaN or an infinity (an overflow) has no distribution: its draw carries
// Ops::kNonFiniteToken, whatever else it holds; finite rows never do.
TEST_P(SampleTest, NonFiniteLogitsAreFlagged) {
  for (double bad : {double(NAN), double(INFINITY), -double(INFINITY)}) {
    std::vector<double> logits(300, 0.5);
    logits[123] = bad;
    for (uint32_t t : draw(logits, {.temperature = 1, .seed = 5}, 3, 1))
      EXPECT_NE(t & Ops::kNonFiniteToken, 0u) << bad;
  }
  for (uint32_t t : draw(std::vector<double>(300, 0.5), {.temperature = 1, .seed = 5}, 3, 1))
    EXPECT_EQ(t & Ops::kNonFiniteToken, 0u);
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
