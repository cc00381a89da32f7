// Embedding with positions, elementwise ops, argmax, top-k and type conversion.
#include <algorithm>
#include <numeric>

#include "support/ops_test.hpp"
#include "ops/reference.hpp"

namespace vkf::test {
namespace {

class HelpersTest : public OpsTest {};

TEST_P(HelpersTest, EmbeddingScalesAndAddsSinusoidalPositions) {
  auto seed = test_seed();
  VKF_SEED_TRACE(seed);
  std::mt19937_64 rng(seed);
  const uint32_t vocab = 37, dim = 18, batch = 3, seq = 7, offset = 5, positions = 64;
  auto table = random_values(size_t(vocab) * dim, rng);
  for (auto& e : table) e = stored(e, dtype());
  std::vector<uint32_t> ids(batch * seq);
  for (auto& id : ids) id = uint32_t(rng() % vocab);
  ids[0] = 0;
  ids[1] = vocab - 1;
  const float scale = std::sqrt(float(dim));
  auto pe = sinusoidal_positions(positions, dim);
  // PE from its formula in double, and the table entry, scaled.
  std::vector<double> want(size_t(batch) * seq * dim), mag(want.size());
  for (uint32_t r = 0; r < batch * seq; ++r)
    for (uint32_t c = 0; c < dim; ++c) {
      const double p = offset + r % seq, angle = p / std::pow(10000.0, double(c - c % 2) / dim);
      const double e = table[size_t(ids[r]) * dim + c] * double(scale);
      want[size_t(r) * dim + c] = e + (c % 2 ? std::cos(angle) : std::sin(angle));
      mag[size_t(r) * dim + c] = std::abs(e) + 1;
    }
  Buffer bid = upload_u32(ctx(), ids, "ids"), bt = upload_as(ctx(), table, dtype(), "table");
  Buffer bpe = ctx().buffer(pe.size() * 4, "pe");
  ctx().upload(bpe, std::span<const float>(pe));
  Buffer out = poisoned(ctx(), want.size(), dtype(), "out");
  auto cl = ctx().command_list();
  Ops o = ops();
  Embedding e{.rows = batch * seq, .vocab = vocab, .dim = dim, .scale = scale, .seq_len = seq,
              .position_offset = offset, .positions = positions};
  o.embedding(cl, e, bid.view(), bt.view(), bpe.view(), out.view());
  cl.submit();
  // fp32: table * scale and the fp32-rounded PE add three roundings: 1e-6 of the magnitude.
  EXPECT_TRUE(close(download_as(ctx(), out, want.size(), dtype()), want, mag, dtype() == DType::F16 ? 1e-3 : 1e-6));

  // Positions past the table and an out-of-range id.
  e.position_offset = positions - 2;
  EXPECT_THROW(o.embedding(cl, e, bid.view(), bt.view(), bpe.view(), out.view()), Error);
  Buffer bad = upload_u32(ctx(), {vocab}, "bad_id");
  auto cl2 = ctx().command_list();
  o.embedding(cl2, {.rows = 1, .vocab = vocab, .dim = dim}, bad.view(), bt.view(), std::nullopt, out.view());
  cl2.submit();
  auto row = download_as(ctx(), out, dim, dtype());
  for (double x : row) EXPECT_TRUE(std::isnan(x)) << "an out-of-range id must not read another row";
}

TEST_P(HelpersTest, ElementwiseAddReluGelu) {
  auto seed = test_seed();
  VKF_SEED_TRACE(seed);
  std::mt19937_64 rng(seed);
  for (uint32_t n : {1u, 3u, 17u, 255u, 1000u, 70001u}) {
    auto a = random_values(n, rng, -6, 6), b = random_values(n, rng, -6, 6);
    for (auto* v : {&a, &b})
      for (auto& e : *v) e = stored(e, dtype());
    Buffer ba = upload_as(ctx(), a, dtype(), "a"), bb = upload_as(ctx(), b, dtype(), "b");
    std::vector<Buffer> outs;
    for (int i = 0; i < 4; ++i) outs.push_back(poisoned(ctx(), n, dtype(), "y"));
    auto cl = ctx().command_list();
    Ops o = ops();
    o.add(cl, ba.view(), bb.view(), outs[0].view(), n);
    o.relu(cl, ba.view(), outs[1].view(), n);
    o.gelu(cl, ba.view(), outs[2].view(), n);
    o.gelu(cl, ba.view(), outs[3].view(), n, true);
    cl.submit();
    std::vector<double> want[4], scale[4];
    for (uint32_t i = 0; i < n; ++i) {
      want[0].push_back(a[i] + b[i]);
      scale[0].push_back(std::abs(a[i]) + std::abs(b[i]));
      want[1].push_back(ref::activate(a[i], Activation::Relu));
      want[2].push_back(ref::activate(a[i], Activation::Gelu));
      want[3].push_back(ref::activate(a[i], Activation::GeluTanh));
      // GELU's tail is exp(-x^2/2) in fp32: the exponent's rounding (~x^2 * 2^-24)
      // becomes relative error of the result, so the scale grows with x^2.
      for (int k = 1; k < 4; ++k) scale[k].push_back(std::abs(want[k].back()) * (k >= 2 ? 1 + a[i] * a[i] : 1));
    }
    // GELU's erfc fit is good to 1.2e-7 relative and exp to a few ulps: 1e-6 of the scale.
    const bool f16 = dtype() == DType::F16;
    for (int k = 0; k < 4; ++k)
      EXPECT_TRUE(close(download_as(ctx(), outs[k], n, dtype()), want[k], scale[k], f16 ? 1e-3 : (k >= 2 ? 1e-6 : 1e-7),
                        f16 ? 6e-8 : 1e-30))
          << "op " << k << " n " << n;
  }
}

TEST_P(HelpersTest, ArgmaxAndTopK) {
  auto seed = test_seed();
  VKF_SEED_TRACE(seed);
  std::mt19937_64 rng(seed);
  for (uint32_t cols : {1u, 3u, 17u, 1000u, 32003u}) {
    const uint32_t rows = 4, k = std::min(cols, 7u);
    auto x = random_values(size_t(rows) * cols, rng, -50, 50);
    for (auto& e : x) e = stored(e, dtype());
    if (cols > 3) {
      x[5 % cols] = x[1];  // ties in row 0: the lower index ranks first
      x[cols + 2] = 1e3;
      x[cols + 3] = 1e3;
    }
    Buffer bx = upload_as(ctx(), x, dtype(), "x"), bi = poisoned(ctx(), rows, DType::F32, "argmax");
    Buffer bv = poisoned(ctx(), rows * k, dtype(), "values"), bk = poisoned(ctx(), rows * k, DType::F32, "indices");
    auto cl = ctx().command_list();
    Ops o = ops();
    o.argmax(cl, bx.view(), bi.view(), rows, cols);
    o.top_k(cl, bx.view(), bv.view(), bk.view(), rows, cols, k);
    cl.submit();
    auto am = download_u32(ctx(), bi, rows);
    auto ti = download_u32(ctx(), bk, rows * k);
    auto tv = download_as(ctx(), bv, rows * k, dtype());
    for (uint32_t r = 0; r < rows; ++r) {
      std::vector<uint32_t> order(cols);
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(),
                       [&](uint32_t a, uint32_t b) { return x[size_t(r) * cols + a] > x[size_t(r) * cols + b]; });
      EXPECT_EQ(am[r], order[0]) << "row " << r << " cols " << cols;
      for (uint32_t t = 0; t < k; ++t) {
        EXPECT_EQ(ti[r * k + t], order[t]) << "row " << r << " rank " << t << " cols " << cols;
        EXPECT_EQ(tv[r * k + t], x[size_t(r) * cols + order[t]]);
      }
    }
  }
  auto cl = ctx().command_list();
  Buffer b = ctx().buffer(64);
  Ops o = ops();
  EXPECT_THROW(o.top_k(cl, b.view(), b.view(), b.view(), 1, 4, 5), Error);
  cl.submit();
}

TEST_P(HelpersTest, ConvertBetweenStorageTypes) {
  auto seed = test_seed();
  VKF_SEED_TRACE(seed);
  std::mt19937_64 rng(seed);
  const uint32_t n = 1000;
  auto x = random_values(n, rng, -100, 100);
  x[0] = 65504;  // fp16's largest
  x[1] = 1e-7;   // fp16 subnormal
  const DType other = dtype() == DType::F16 ? DType::F32 : DType::F16;
  Buffer src = upload_as(ctx(), x, dtype(), "src"), dst = poisoned(ctx(), n, other, "dst");
  auto cl = ctx().command_list();
  Ops o = ops();
  o.convert(cl, src.view(), dtype(), dst.view(), other, n);
  cl.submit();
  auto got = download_as(ctx(), dst, n, other);
  for (uint32_t i = 0; i < n; ++i) {
    // fp32 -> fp16 rounds to nearest (as the host's to_half); fp16 -> fp32 is exact.
    double want = from_half(to_half(float(x[i])));
    ASSERT_EQ(got[i], want) << "element " << i << " = " << x[i];
  }
}

VKF_FOR_EACH_DTYPE(HelpersTest);

}  // namespace
}  // namespace vkf::test
