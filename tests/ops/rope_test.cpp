// Rotary position embedding against a double reference: awkward head sizes and row
// counts, batches with strides (gaps poisoned with NaN must stay so: nothing outside the
// heads is touched), positions from an offset, from a decode step (with the rows at the
// step's cache row) and shifted by each sequence's left padding. Tolerance: two products
// and a sum of fp32 values, the table exact to fp32: 1e-6 of |x1| + |x2| (fp16: 1e-3).
#include "support/ops_test.hpp"
#include "vkformer/tensor_io.hpp"

namespace vkf::test {
namespace {

class RopeTest : public OpsTest {
 protected:
  // x rotated in double: row i of item b at position first[b] + i (at least 0).
  static std::vector<double> rotated(const std::vector<double>& x, const Rope& r, uint64_t bs, uint64_t rs,
                                     uint32_t row0, const std::vector<int64_t>& first, const std::vector<float>& table,
                                     std::vector<double>& scale) {
    std::vector<double> y = x;
    scale.assign(x.size(), 0.0);
    const uint32_t half = r.head_dim / 2;
    for (uint32_t b = 0; b < r.batch; ++b)
      for (uint32_t i = 0; i < r.rows; ++i)
        for (uint32_t h = 0; h < r.heads; ++h)
          for (uint32_t j = 0; j < half; ++j) {
            const int64_t p = std::max<int64_t>(first[b] + i, 0);
            const size_t at = b * bs + (row0 + i) * rs + h * r.head_dim + j;
            const double c = table[(p * half + j) * 2], s = table[(p * half + j) * 2 + 1];
            y[at] = x[at] * c - x[at + half] * s;
            y[at + half] = x[at + half] * c + x[at] * s;
            scale[at] = scale[at + half] = std::abs(x[at]) + std::abs(x[at + half]);
          }
    return y;
  }
};

TEST_P(RopeTest, RotatesPairsAtTheirPositions) {
  auto seed = test_seed();
  VKF_SEED_TRACE(seed);
  std::mt19937_64 rng(seed);
  const bool f16 = dtype() == DType::F16;
  struct Shape {
    uint32_t batch, rows, heads, head_dim;
  };
  for (const Shape& sh : {Shape{1, 1, 1, 2}, Shape{2, 3, 3, 8}, Shape{3, 17, 2, 34}, Shape{1, 255, 1, 128},
                          Shape{2, 1030, 1, 16}}) {
    SCOPED_TRACE(std::to_string(sh.batch) + "x" + std::to_string(sh.rows) + "x" + std::to_string(sh.heads) + "x" +
                 std::to_string(sh.head_dim));
    const uint32_t half = sh.head_dim / 2, positions = sh.rows + 40;
    std::vector<float> inv_freq(half);
    for (uint32_t j = 0; j < half; ++j) inv_freq[j] = float(1.0 / std::pow(10000.0, 2.0 * j / sh.head_dim));
    const auto table = rotary_positions(positions, inv_freq, 1.0f);
    // Rows with a gap of 3 elements after the heads, batches with one of 5 rows' worth.
    const uint64_t rs = uint64_t(sh.heads) * sh.head_dim + 3, bs = (sh.rows + 5) * rs;
    auto x = random_values(sh.batch * bs, rng, -2, 2);
    for (auto& e : x) e = stored(e, dtype());
    std::vector<double> poisoned_x = x;
    Rope r{.batch = sh.batch, .rows = sh.rows, .heads = sh.heads, .head_dim = sh.head_dim, .batch_stride = bs,
           .row_stride = rs, .position_offset = 7, .positions = positions};
    std::vector<uint32_t> shift(sh.batch);
    for (uint32_t b = 0; b < sh.batch; ++b) shift[b] = b * 4;  // 0, 4, 8: the last past the offset
    for (bool shifted : {false, true}) {
      SCOPED_TRACE(shifted ? "shifted" : "not shifted");
      std::vector<double> in = x;
      // The gaps hold NaN: never read into a head, never written.
      for (uint32_t b = 0; b < sh.batch; ++b)
        for (uint64_t k = 0; k < bs; ++k)
          if (k >= uint64_t(sh.rows) * rs || k % rs >= uint64_t(sh.heads) * sh.head_dim) in[b * bs + k] = NAN;
      Buffer bx = upload_as(ctx(), in, dtype(), "x"), bs_ = upload_u32(ctx(), shift, "shift");
      Buffer bt = ctx().buffer(table.size() * 4, "table");
      ctx().upload(bt, std::span<const float>(table));
      auto cl = ctx().command_list();
      ops().rope(cl, r, bx.view(), bt.view(), std::nullopt, shifted ? std::optional(bs_.view()) : std::nullopt);
      cl.submit();
      std::vector<int64_t> first(sh.batch);
      for (uint32_t b = 0; b < sh.batch; ++b) first[b] = 7 - (shifted ? int64_t(shift[b]) : 0);
      std::vector<double> scale;
      auto want = rotated(in, r, bs, rs, 0, first, table, scale);
      auto got = download_as(ctx(), bx, in.size(), dtype());
      for (size_t k = 0; k < got.size(); ++k)
        if (std::isnan(in[k])) ASSERT_TRUE(std::isnan(got[k])) << "element " << k << " outside the heads was written";
      for (size_t k = 0; k < got.size(); ++k)
        if (std::isnan(in[k])) got[k] = want[k] = 0, scale[k] = 1;
      EXPECT_TRUE(close(got, want, scale, f16 ? 1e-3 : 1e-6, f16 ? 6e-8 : 1e-30));
    }
  }
}

// A decode step: one row per sequence at the step's cache row and position (a KV cache
// of 20 rows), recorded once and replayed at several steps, shifted by left padding.
TEST_P(RopeTest, TakesTheRowAndPositionFromADecodeStep) {
  auto seed = test_seed();
  VKF_SEED_TRACE(seed);
  std::mt19937_64 rng(seed);
  const uint32_t B = 2, H = 2, d = 6, capacity = 20, half = d / 2;
  std::vector<float> inv_freq = {1.0f, 0.1f, 0.01f};
  const auto table = rotary_positions(capacity, inv_freq, 2.0f);  // linear scaling: positions halved
  const uint64_t rs = 2 * H * d, bs = capacity * rs;  // keys at [0, H*d) of a [B, capacity, 2*H*d] cache
  Buffer state = upload_u32(ctx(), {0, 0, 0}, "decode_step"), shift = upload_u32(ctx(), {0, 3}, "shift");
  Buffer bt = ctx().buffer(table.size() * 4, "table");
  ctx().upload(bt, std::span<const float>(table));
  auto x = random_values(B * bs, rng, -2, 2);
  for (auto& e : x) e = stored(e, dtype());
  Buffer bx = upload_as(ctx(), x, dtype(), "cache");
  const Rope r{.batch = B, .rows = 1, .heads = H, .head_dim = d, .batch_stride = bs, .row_stride = rs,
               .positions = capacity, .rows_from_step = true};
  auto cl = ctx().command_list();
  ops().rope(cl, r, bx.view(), bt.view(), DecodeStep{state.view(), capacity - 1}, shift.view());
  std::vector<double> cur = x;
  for (uint32_t step : {0u, 5u, capacity - 1}) {
    const DecodeStep::State st{.step = step, .position = step, .key_count = step + 1};
    ctx().upload(state, &st, sizeof st);
    cl.submit();
    std::vector<double> scale;
    const auto want = rotated(cur, r, bs, rs, step, {int64_t(step), int64_t(step) - 3}, table, scale);
    const auto got = download_as(ctx(), bx, cur.size(), dtype());
    for (size_t k = 0; k < got.size(); ++k) scale[k] = scale[k] ? scale[k] : std::abs(want[k]) + 1e-30;
    const bool f16 = dtype() == DType::F16;
    EXPECT_TRUE(close(got, want, scale, f16 ? 1e-3 : 1e-6, f16 ? 6e-8 : 1e-30)) << "step " << step;
    cur = got;
  }
  (void)half;
  // Queries [B, 1, 2H, d] (packed) and these keys in one dispatch: both rotated at the
  // step's position, the keys at the step's cache row, the queries at row 0.
  {
    const Rope rq{.batch = B, .rows = 1, .heads = 2 * H, .head_dim = d, .positions = capacity};
    auto q = random_values(size_t(B) * 2 * H * d, rng, -2, 2);
    for (auto& e : q) e = stored(e, dtype());
    Buffer bq = upload_as(ctx(), q, dtype(), "queries");
    auto both = ctx().command_list();
    ops().rope(both, rq, bq.view(), bt.view(), DecodeStep{state.view(), capacity - 1}, shift.view(), Ops::RopeTarget{r, bx.view()});
    const uint32_t step = 11;
    const DecodeStep::State st{.step = step, .position = step, .key_count = step + 1};
    ctx().upload(state, &st, sizeof st);
    both.submit();
    const bool f16 = dtype() == DType::F16;
    std::vector<double> scale;
    const auto want_k = rotated(cur, r, bs, rs, step, {int64_t(step), int64_t(step) - 3}, table, scale);
    auto got_k = download_as(ctx(), bx, cur.size(), dtype());
    for (size_t k = 0; k < got_k.size(); ++k) scale[k] = scale[k] ? scale[k] : std::abs(want_k[k]) + 1e-30;
    EXPECT_TRUE(close(got_k, want_k, scale, f16 ? 1e-3 : 1e-6, f16 ? 6e-8 : 1e-30)) << "keys beside queries";
    const uint64_t qrs = uint64_t(2) * H * d;
    const auto want_q = rotated(q, rq, qrs, qrs, 0, {int64_t(step), int64_t(step) - 3}, table, scale);
    EXPECT_TRUE(close(download_as(ctx(), bq, q.size(), dtype()), want_q, scale, f16 ? 1e-3 : 1e-6, f16 ? 6e-8 : 1e-30))
        << "queries beside keys";
    Rope other = r;
    other.head_dim = 4;  // the targets must agree on all but heads, strides and rows
    auto cl3 = ctx().command_list();
    EXPECT_THROW(ops().rope(cl3, rq, bq.view(), bt.view(), DecodeStep{state.view(), capacity - 1}, shift.view(),
                            Ops::RopeTarget{other, bx.view()}),
                 Error);
  }
  // Positions past the table, an odd head size, rows past x: named errors.
  auto cl2 = ctx().command_list();
  Rope past = r;
  past.rows_from_step = false;
  past.position_offset = capacity;
  EXPECT_THROW(ops().rope(cl2, past, bx.view(), bt.view()), Error);
  Rope odd = past;
  odd.position_offset = 0, odd.head_dim = 5;
  EXPECT_THROW(ops().rope(cl2, odd, bx.view(), bt.view()), Error);
  Rope many = past;
  many.position_offset = 0, many.rows = capacity + 1;
  EXPECT_THROW(ops().rope(cl2, many, bx.view(), bt.view()), Error);
}

VKF_FOR_EACH_DTYPE(RopeTest);

}  // namespace
}  // namespace vkf::test
