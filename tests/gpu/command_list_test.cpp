// Automatic barriers, re-submission and GPU timestamps.
#include "support/gpu_test.hpp"

namespace vkf::test {
namespace {

// y[i] = x[n-1-i] + 1: every element of a step depends on an element written by a
// different workgroup of the previous step, so a missing barrier is a real race.
const char* kReverseAddOne = R"(#version 450
layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) writeonly buffer Y { float y[]; };
layout(push_constant) uniform P { uint n; } pc;
void main() {
  uint i = gl_GlobalInvocationID.x;
  if (i < pc.n) y[i] = x[pc.n - 1 - i] + 1.0;
}
)";

const char* kAddOneInPlace = R"(#version 450
layout(local_size_x = 64) in;
layout(std430, binding = 0) buffer Y { float y[]; };
layout(push_constant) uniform P { uint n; } pc;
void main() {
  uint i = gl_GlobalInvocationID.x;
  if (i < pc.n) y[i] += 1.0;
}
)";

class Commands : public GpuTest {
 protected:
  Kernel reverse() { return ctx().kernel({.shader = "reverse_add_one", .source = kReverseAddOne, .bindings = 2, .push_constant_bytes = 4}); }
  Kernel add_one() { return ctx().kernel({.shader = "add_one", .source = kAddOneInPlace, .bindings = 1, .push_constant_bytes = 4}); }
};

void record_chain(CommandList& cl, Kernel k, Buffer& a, Buffer& b, uint32_t n, uint32_t steps) {
  for (uint32_t s = 0; s < steps; ++s) {
    Buffer& src = s % 2 ? b : a;
    Buffer& dst = s % 2 ? a : b;
    cl.dispatch(k, {(n + 63) / 64}, {src.in(), dst.out()}, n, "reverse_add_one");
  }
}

TEST_F(Commands, ChainOf128DependentDispatchesGivesExactValues) {
  const uint32_t n = 100003, steps = 128;
  std::vector<float> x(n), poison(n, NAN);
  for (uint32_t i = 0; i < n; ++i) x[i] = float(i % 1000);
  Buffer a = ctx().buffer(n * 4, "a"), b = ctx().buffer(n * 4, "b");
  ctx().upload(a, std::span<const float>(x));
  ctx().upload(b, std::span<const float>(poison));
  auto cl = ctx().command_list();
  record_chain(cl, reverse(), a, b, n, steps);
  EXPECT_EQ(cl.stats().barriers, steps - 1);  // one between each dependent pair
  cl.submit();
  std::vector<float> out(n);
  ctx().download(steps % 2 ? b : a, std::span<float>(out));
  // An even number of reversals puts every element back in place, plus one per step.
  for (uint32_t i = 0; i < n; ++i) ASSERT_EQ(out[i], x[i] + float(steps)) << "element " << i;
}

// Without barriers, synchronization validation sees the race even on a device that
// happens to run dispatches in order: this is what makes the chain test able to fail.
TEST(CommandsWithoutBarriers, MissingBarriersAreCaught) {
  MessageLog log;
  Context ctx(test_options(log));
  Kernel k = ctx.kernel({.shader = "reverse_add_one", .source = kReverseAddOne, .bindings = 2, .push_constant_bytes = 4});
  const uint32_t n = 4096;
  Buffer a = ctx.buffer(n * 4, "a"), b = ctx.buffer(n * 4, "b");
  std::vector<float> zeros(n, 0.0f);
  ctx.upload(a, std::span<const float>(zeros));
  auto cl = ctx.command_list();
  cl.set_auto_barriers(false);
  record_chain(cl, k, a, b, n, 4);
  cl.submit();
  EXPECT_GT(ctx.validation_messages(), 0u) << "synchronization validation did not report the missing barriers";
  EXPECT_NE(log.joined().find("SYNC-HAZARD"), std::string::npos) << log.joined();
}

TEST_F(Commands, IndependentDispatchesGetNoBarrier) {
  const uint32_t n = 1000;
  std::vector<Buffer> ins, outs;
  for (int i = 0; i < 4; ++i) {
    ins.push_back(ctx().buffer(n * 4, "in"));
    outs.push_back(ctx().buffer(n * 4, "out"));
    std::vector<float> v(n, float(i));
    ctx().upload(ins.back(), std::span<const float>(v));
  }
  auto cl = ctx().command_list();
  Kernel k = reverse();
  for (int i = 0; i < 4; ++i) cl.dispatch(k, {(n + 63) / 64}, {ins[i].in(), outs[i].out()}, n);
  // Two reads of the same input are independent too.
  Buffer extra = ctx().buffer(n * 4, "extra");
  cl.dispatch(k, {(n + 63) / 64}, {ins[0].in(), extra.out()}, n);
  EXPECT_EQ(cl.stats().barriers, 0u);
  // Disjoint views of one buffer are independent.
  Buffer halves = ctx().buffer(2 * 1024 * 4, "halves");
  cl.dispatch(k, {16}, {ins[1].in(), vkf::out(halves.view(0, 1024 * 4))}, 1000u);
  cl.dispatch(k, {16}, {ins[2].in(), vkf::out(halves.view(1024 * 4, 1024 * 4))}, 1000u);
  EXPECT_EQ(cl.stats().barriers, 0u);
  cl.submit();
  for (int i = 0; i < 4; ++i) {
    std::vector<float> v(n);
    ctx().download(outs[i], std::span<float>(v));
    for (float x : v) ASSERT_EQ(x, float(i) + 1.0f);
  }
}

TEST_F(Commands, RecordOnceSubmitManyTimes) {
  const uint32_t n = 777;
  Buffer y = ctx().buffer(n * 4, "y");
  std::vector<float> zeros(n, 0.0f), out(n);
  ctx().upload(y, std::span<const float>(zeros));
  auto cl = ctx().command_list();
  Kernel k = add_one();
  for (int i = 0; i < 3; ++i) cl.dispatch(k, {(n + 63) / 64}, {y.inout()}, n);
  EXPECT_EQ(cl.stats().barriers, 2u);
  for (int s = 1; s <= 5; ++s) {
    cl.submit();
    ctx().download(y, std::span<float>(out));
    for (uint32_t i = 0; i < n; ++i) ASSERT_EQ(out[i], float(3 * s)) << "submit " << s << " element " << i;
  }
  EXPECT_EQ(cl.stats().submits, 5u);
  EXPECT_THROW(cl.dispatch(k, {1}, {y.inout()}, n), Error);  // recording has ended
}

// A repeatable list runs several times in one submission, each run after the one
// before: a chain that reverses the buffer each run (a race if runs overlapped) gives
// exactly the sequential result.
TEST_F(Commands, RepeatableListRunsManyTimesInOneSubmit) {
  const uint32_t n = 1000;
  Buffer a = ctx().buffer(n * 4, "a"), b = ctx().buffer(n * 4, "b");
  std::vector<float> x(n), out(n);
  for (uint32_t i = 0; i < n; ++i) x[i] = float(i);
  ctx().upload(a, std::span<const float>(x));
  auto cl = ctx().command_list({.repeatable = true});
  record_chain(cl, reverse(), a, b, n, 2);  // a -> b -> a: a[i] = a[i] + 2 after each run
  const uint64_t submits = ctx().counters().submits;
  cl.submit(7);
  EXPECT_EQ(ctx().counters().submits, submits + 1);
  ctx().download(a, std::span<float>(out));
  for (uint32_t i = 0; i < n; ++i) ASSERT_EQ(out[i], float(i + 14)) << "element " << i;
  cl.submit(1);
  ctx().download(a, std::span<float>(out));
  EXPECT_EQ(out[5], float(5 + 16));
  // Only a list made repeatable may run twice at once.
  auto once = ctx().command_list();
  record_chain(once, reverse(), a, b, n, 2);
  EXPECT_THROW(once.submit(2), Error);
}

TEST_F(Commands, CopiesAndFillsAreOrderedLikeDispatches) {
  const uint32_t n = 300;
  Buffer a = ctx().buffer(n * 4, "a"), b = ctx().buffer(n * 4, "b");
  auto cl = ctx().command_list();
  cl.fill(a.view(), 0);             // a = 0
  cl.dispatch(add_one(), {5}, {a.inout()}, n);  // a = 1
  cl.copy(a.view(), b.view());      // b = 1
  cl.dispatch(add_one(), {5}, {b.inout()}, n);  // b = 2
  cl.submit();
  std::vector<float> out(n);
  ctx().download(b, std::span<float>(out));
  for (float x : out) ASSERT_EQ(x, 2.0f);
}

TEST_F(Commands, BadDispatchesAreClearErrors) {
  Buffer y = ctx().buffer(64, "y");
  auto cl = ctx().command_list();
  Kernel k = add_one();
  EXPECT_THROW(cl.dispatch(k, {1}, {y.inout(), y.inout()}, 1u), Error);  // two buffers for one binding
  EXPECT_THROW(cl.dispatch(k, {1}, {y.inout()}), Error);                   // push constants missing
  EXPECT_THROW(cl.dispatch(k, {0}, {y.inout()}, 1u), Error);               // no workgroups
  EXPECT_THROW(cl.dispatch(k, {1, 1, ~0u}, {y.inout()}, 1u), Error);       // too many
  EXPECT_THROW(cl.dispatch(Kernel{}, {1}, {y.inout()}, 1u), Error);
  EXPECT_THROW(cl.copy(y.view(0, 32), y.view(0, 16)), Error);
  cl.submit();
}

TEST_F(Commands, TimestampsAreNonZeroAndOrdered) {
  if (ctx().capabilities().timestamp_valid_bits == 0) GTEST_SKIP() << "no timestamps on this queue";
  const uint32_t n = 1 << 16, steps = 12;
  Buffer a = ctx().buffer(n * 4, "a"), b = ctx().buffer(n * 4, "b");
  std::vector<float> zeros(n, 0.0f);
  ctx().upload(a, std::span<const float>(zeros));
  auto cl = ctx().command_list({.profile = true});
  record_chain(cl, reverse(), a, b, n, steps);
  cl.submit();
  const auto& t = cl.timings();
  ASSERT_EQ(t.size(), steps);
  for (uint32_t i = 0; i < steps; ++i) {
    EXPECT_GT(t[i].start_tick, 0u);
    EXPECT_GT(t[i].end_tick, t[i].start_tick) << "dispatch " << i;
    EXPECT_GT(t[i].microseconds, 0.0);
    EXPECT_EQ(t[i].groups.x, (n + 63) / 64);
    if (i) EXPECT_GE(t[i].start_tick, t[i - 1].end_tick) << "dependent dispatches overlap in time";
  }
  auto report = cl.profile_report();
  EXPECT_NE(report.find("reverse_add_one"), std::string::npos) << report;
  EXPECT_NE(report.find("1024x1x1"), std::string::npos) << report;
  // A second submit of the same list times again.
  cl.submit();
  EXPECT_EQ(cl.timings().size(), steps);
  // Long labels (a GEMM's names its variant and its shape) are reported whole.
  auto named = ctx().command_list({.profile = true});
  const std::string label = "gemm_small_m texels normed 1x512x2048, a label of 60 chars";
  named.dispatch(reverse(), {(n + 63) / 64}, {a.in(), b.out()}, n, label);
  named.submit();
  EXPECT_NE(named.profile_report().find(label + " "), std::string::npos) << named.profile_report();
}

}  // namespace
}  // namespace vkf::test
