// top_k per row: the k largest values, descending, with their indices (ties: lower index first).
#include <algorithm>
#include <numeric>

#include "support/ops_test.hpp"

namespace vkf::test {
namespace {

class TopKTest : public OpsTest {};

TEST_P(TopKTest, LargestValuesDescendingWithIndices) {
  auto seed = test_seed();
  VKF_SEED_TRACE(seed);
  std::mt19937_64 rng(seed);
  for (uint32_t cols : {1u, 3u, 17u, 255u, 1000u, 32003u}) {
    const uint32_t rows = 4, k = std::min(cols, 7u);
    auto x = random_values(size_t(rows) * cols, rng, -50, 50);
    for (auto& e : x) e = stored(e, dtype());
    if (cols > 5) x[5] = x[1];  // ties in row 0: the lower index ranks first
    Buffer bx = upload_as(ctx(), x, dtype(), "x");
    Buffer bv = poisoned(ctx(), rows * k, dtype(), "values"), bk = poisoned(ctx(), rows * k, DType::F32, "indices");
    auto cl = ctx().command_list();
    Ops o = ops();
    o.top_k(cl, bx.view(), bv.view(), bk.view(), rows, cols, k);
    cl.submit();
    auto ti = download_u32(ctx(), bk, rows * k);
    auto tv = download_as(ctx(), bv, rows * k, dtype());
    for (uint32_t r = 0; r < rows; ++r) {
      std::vector<uint32_t> order(cols);
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(),
                       [&](uint32_t a, uint32_t b) { return x[size_t(r) * cols + a] > x[size_t(r) * cols + b]; });
      for (uint32_t t = 0; t < k; ++t) {
        EXPECT_EQ(ti[r * k + t], order[t]) << "row " << r << " rank " << t << " cols " << cols;
        EXPECT_EQ(tv[r * k + t], x[size_t(r) * cols + order[t]]);  // values are copied, not computed: exact
      }
    }
  }
}

TEST_P(TopKTest, KOutsideTheRowIsAClearError) {
  auto cl = ctx().command_list();
  Buffer b = ctx().buffer(64);
  Ops o = ops();
  EXPECT_THROW(o.top_k(cl, b.view(), b.view(), b.view(), 1, 4, 5), Error);
  EXPECT_THROW(o.top_k(cl, b.view(), b.view(), b.view(), 1, 4, 0), Error);
  cl.submit();
}

VKF_FOR_EACH_DTYPE(TopKTest);

}  // namespace
}  // namespace vkf::test
