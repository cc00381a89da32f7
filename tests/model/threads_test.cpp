// A stress test for the threading rules (docs: a Context is shared, a Session is per
// thread): several threads each load a model and generate on one context, at once,
// with and without the validation layer. The ThreadSanitizer run (tools/sanitize.sh)
// runs this and the multi-session tests.
#include <thread>

#include "support/gpu_test.hpp"
#include "vkformer/model.hpp"

namespace vkf::test {
namespace {

const std::string kModel = std::string(VKF_SOURCE_DIR) + "/samples/dates";

class Threads : public ::testing::TestWithParam<bool> {};

TEST_P(Threads, SeveralThreadsLoadAndGenerateOnOneContext) {
  MessageLog log;
  ContextOptions o = test_options(log);
  o.validation = o.sync_validation = GetParam();
  Context ctx(o);
  const std::vector<std::vector<uint32_t>> sources = {{23, 33, 47, 4, 12}, {12, 8, 12, 8, 17, 16}};
  const GenerateOptions go = {.max_new_tokens = 10};
  std::vector<std::vector<uint32_t>> reference;
  {
    Session s(Model::load(ctx, kModel));
    reference = s.generate(sources, go);
  }
  constexpr int kThreads = 4, kRounds = 3;
  std::vector<std::string> failures(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      try {
        for (int r = 0; r < kRounds; ++r) {
          Session s(Model::load(ctx, kModel));
          GenerateOptions mine = go;
          mine.max_steps_per_submit = 1 + uint32_t(t);  // different submit patterns at once
          if (s.generate(sources, mine) != reference) failures[t] = "thread " + std::to_string(t) + ": different tokens";
        }
      } catch (const std::exception& e) {
        failures[t] = "thread " + std::to_string(t) + ": " + e.what();
      }
    });
  for (auto& th : threads) th.join();
  for (auto& f : failures) EXPECT_EQ(f, "");
  EXPECT_EQ(ctx.validation_messages(), 0u) << log.joined();
  EXPECT_EQ(ctx.memory_stats().allocated, 0u) << "every model and session was destroyed";
}

INSTANTIATE_TEST_SUITE_P(Validation, Threads, ::testing::Values(true, false),
                         [](const auto& info) { return info.param ? "with_validation" : "without_validation"; });

}  // namespace
}  // namespace vkf::test
