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
