// decode_advance: each step's tokens recorded at their row, EOS sticky when stop_at_eos,
// the next inputs and the step state advanced - against the host loop it replaces.
#include "support/ops_test.hpp"

namespace vkf::test {
namespace {

class DecodeAdvanceTest : public OpsTest {};

TEST_P(DecodeAdvanceTest, RecordsFeedsAndAdvancesLikeTheHostLoop) {
  auto seed = test_seed();
  VKF_SEED_TRACE(seed);
  std::mt19937_64 rng(seed);
  const uint32_t eos = 2, vocab = 5, steps = 6;
  for (uint32_t batch : {1u, 3u, 17u, 255u, 1000u})
    for (bool stop : {true, false}) {
      Buffer next = ctx().buffer(batch * 4, "next_ids"), input = poisoned(ctx(), batch, DType::F32, "input_ids");
      Buffer done = upload_u32(ctx(), std::vector<uint32_t>(batch, 0), "done");
      Buffer tokens = poisoned(ctx(), size_t(steps + 1) * batch, DType::F32, "tokens");  // one row to spare
      Buffer state = upload_u32(ctx(), {0, 4, 1}, "decode_step");  // position runs ahead of step: both advance
      Ops o = ops();
      auto cl = ctx().command_list();
      o.decode_advance(cl, {.batch = batch, .capacity = steps + 1, .eos_id = eos, .stop_at_eos = stop}, next.view(),
                       input.view(), done.view(), tokens.view(), {state.view(), steps});
      std::vector<bool> host_done(batch, false);
      std::vector<std::vector<uint32_t>> produced(steps);
      for (uint32_t t = 0; t < steps; ++t) {
        std::vector<uint32_t> ids(batch);
        for (auto& id : ids) id = uint32_t(rng() % vocab);  // EOS is likely: 1 in 5
        ctx().upload(next, ids.data(), batch * 4);
        cl.submit();
        produced[t] = ids;
        const auto fed = download_u32(ctx(), input, batch);
        for (uint32_t b = 0; b < batch; ++b) {
          host_done[b] = host_done[b] || (stop && ids[b] == eos);
          ASSERT_EQ(fed[b], host_done[b] ? eos : ids[b]) << "batch " << batch << " step " << t << " sequence " << b;
        }
      }
      const auto st = download_u32(ctx(), state, 3);
      EXPECT_EQ(st, (std::vector<uint32_t>{steps, 4 + steps, 1 + steps}));
      const auto rows = download_u32(ctx(), tokens, size_t(steps + 1) * batch);
      for (uint32_t t = 0; t < steps; ++t)
        for (uint32_t b = 0; b < batch; ++b) ASSERT_EQ(rows[size_t(t) * batch + b], produced[t][b]);
      for (uint32_t b = 0; b < batch; ++b) EXPECT_EQ(rows[size_t(steps) * batch + b], 0x7fc00000u) << "row past the steps";
    }
}

TEST_P(DecodeAdvanceTest, ShortBuffersAreClearErrors) {
  Buffer small = ctx().buffer(16, "small"), state = upload_u32(ctx(), {0, 0, 1}, "decode_step");
  Ops o = ops();
  auto cl = ctx().command_list();
  EXPECT_THROW(o.decode_advance(cl, {.batch = 8, .capacity = 2}, small.view(), small.view(), small.view(), small.view(),
                                {state.view(), 1}),
               Error);
  EXPECT_THROW(o.decode_advance(cl, {.batch = 1, .capacity = 1}, small.view(), small.view(), small.view(), small.view(),
                                {small.view(0, 8), 1}),
               Error);
  cl.submit();
}

VKF_FOR_EACH_DTYPE(DecodeAdvanceTest);

}  // namespace
}  // namespace vkf::test
