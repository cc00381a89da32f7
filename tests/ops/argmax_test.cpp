// argmax per row: the index of the largest value, the first on ties.
#include <algorithm>
#include <numeric>

#include "support/ops_test.hpp"

namespace vkf::test {
namespace {

class ArgmaxTest : public OpsTest {};

// The reference order of a row: indices by value, descending, ties by index.
std::vector<uint32_t> ranked(const std::vector<double>& x, uint32_t row, uint32_t cols) {
  std::vector<uint32_t> order(cols);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](uint32_t a, uint32_t b) { return x[size_t(row) * cols + a] > x[size_t(row) * cols + b]; });
  return order;
}

TEST_P(ArgmaxTest, FirstLargestIndexPerRow) {
  auto seed = test_seed();
  VKF_SEED_TRACE(seed);
  std::mt19937_64 rng(seed);
  for (uint32_t cols : {1u, 3u, 17u, 255u, 1000u, 32003u}) {
    const uint32_t rows = 4;
    auto x = random_values(size_t(rows) * cols, rng, -50, 50);
    for (auto& e : x) e = stored(e, dtype());
    if (cols > 3) {
      x[cols + 2] = 1e3;  // a tie for the largest in row 1: the lower index wins
      x[cols + 3] = 1e3;
    }
    Buffer bx = upload_as(ctx(), x, dtype(), "x"), bi = poisoned(ctx(), rows, DType::F32, "argmax");
    auto cl = ctx().command_list();
    Ops o = ops();
    o.argmax(cl, bx.view(), bi.view(), rows, cols);
    cl.submit();
    auto am = download_u32(ctx(), bi, rows);
    for (uint32_t r = 0; r < rows; ++r) EXPECT_EQ(am[r], ranked(x, r, cols)[0]) << "row " << r << " cols " << cols;
  }
}

// flag_non_finite (decoding): a row whose largest value is NaN or infinite gets its index
// with Ops::kNonFiniteToken set; a finite row (-inf among finite values included) does
// not; without the flag the indices are torch.argmax's.
TEST_P(ArgmaxTest, FlagsRowsWhoseLargestValueIsNotFinite) {
  const uint32_t cols = 37;
  std::vector<double> x(4 * cols, 1.0);
  x[0 * cols + 5] = NAN;
  x[1 * cols + 9] = INFINITY;
  x[2 * cols + 3] = 2.0, x[2 * cols + 4] = -INFINITY;
  x[3 * cols + 30] = 3.0;
  Buffer bx = upload_as(ctx(), x, dtype(), "x");
  for (bool flag : {false, true}) {
    Buffer bi = poisoned(ctx(), 4, DType::F32, "i");
    auto cl = ctx().command_list();
    ops().argmax(cl, bx.view(), bi.view(), 4, cols, flag);
    cl.submit();
    const auto got = download_u32(ctx(), bi, 4);
    const uint32_t f = flag ? Ops::kNonFiniteToken : 0u;
    EXPECT_EQ(got, (std::vector<uint32_t>{5u | f, 9u | f, 3u, 30u})) << flag;
  }
}

// The orders' corners, each placed so that the two elements fall to different lanes of
// a subgroup (CPU drivers reduce across lanes) and to the same lane: -0 ties +0, the
// first NaN wins over a later NaN and over +inf, and a row of -inf is not finite. Rows
// of 304 values are whole 16-byte units (read a unit a lane on CPU drivers); of 301, not.
TEST_P(ArgmaxTest, TiesZerosAndNaNsAcrossLanes) {
  for (uint32_t cols : {304u, 301u})
    for (uint32_t gap : {1u, 7u, 8u, 16u, 64u, 256u}) {
      SCOPED_TRACE("cols " + std::to_string(cols) + " gap " + std::to_string(gap));
      std::vector<double> x(5 * cols, -1.0);
      x[0 * cols + 3] = -0.0, x[0 * cols + 3 + gap] = 0.0;  // the tie: index 3
      x[1 * cols + 9 + gap] = -0.0, x[1 * cols + 9] = 0.0;  // again, the signs swapped
      x[2 * cols + 20] = INFINITY, x[2 * cols + 20 + gap] = NAN, x[2 * cols + 290] = NAN;  // the first NaN
      for (uint32_t c = 0; c < cols; ++c) x[3 * cols + c] = -INFINITY;                    // index 0, flagged
      x[4 * cols + 1] = 5.0, x[4 * cols + 1 + gap] = 5.0;  // an ordinary tie
      Buffer bx = upload_as(ctx(), x, dtype(), "x"), bi = poisoned(ctx(), 5, DType::F32, "i");
      auto cl = ctx().command_list();
      ops().argmax(cl, bx.view(), bi.view(), 5, cols, true);
      cl.submit();
      const uint32_t f = Ops::kNonFiniteToken;
      EXPECT_EQ(download_u32(ctx(), bi, 5), (std::vector<uint32_t>{3u, 9u, (20u + gap) | f, 0u | f, 1u}));
    }
}

TEST_P(ArgmaxTest, WrongShapesAreClearErrors) {
  auto cl = ctx().command_list();
  Buffer b = ctx().buffer(64);
  Ops o = ops();
  EXPECT_THROW(o.argmax(cl, b.view(), b.view(), 0, 4), Error);
  EXPECT_THROW(o.argmax(cl, b.view(), b.view(), 4, 1000), Error);
  cl.submit();
}

VKF_FOR_EACH_DTYPE(ArgmaxTest);

}  // namespace
}  // namespace vkf::test
