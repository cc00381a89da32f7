// Injected faults (Context::inject_faults): a device allocation that fails, host memory
// that runs out, a device lost in a submit, at every point of loading a model, encoding
// and generating. Each is an error from the API (never a crash or a hang), what the
// failed call took is given back, and the process carries on: on the same context after
// an allocation failure, on a new one after a lost device. Cancellation too.
#include <atomic>
#include <filesystem>
#include <thread>

#include "support/gpu_test.hpp"
#include "vkformer/model.hpp"

namespace vkf::test {
namespace {

const std::string kModel = std::string(VKF_SOURCE_DIR) + "/samples/dates";
const std::vector<uint32_t> kSource = {23, 33, 47, 4, 12, 5, 4, 10, 18, 18, 17};  // "March 3, 1998" in samples/dates' vocabulary
const GenerateOptions kOptions = {.max_new_tokens = 12, .stop_at_eos = false, .max_steps_per_submit = 4};

std::vector<uint32_t> run(Context& ctx) {
  auto model = Model::load(ctx, kModel);
  Session session(model);
  return session.generate({kSource}, kOptions)[0];
}

// Arms one fault at event `n`, loads and generates; true when the fault fired (the call
// failed). Fails the test if the call failed any other way, leaked or upset validation.
bool fails_cleanly(Context& ctx, MessageLog& log, InjectedFaults f, const std::vector<uint32_t>& reference) {
  const uint64_t before = ctx.memory_stats().allocated;
  const uint64_t messages = ctx.validation_messages();
  bool fired = false;
  ctx.inject_faults(f);
  try {
    EXPECT_EQ(run(ctx), reference) << "a run the fault did not reach must still be right";
  } catch (const std::bad_alloc&) {
    fired = f.host_allocation != 0;
    EXPECT_TRUE(fired) << "std::bad_alloc without an injected host fault";
  } catch (const Error& e) {
    const std::string what = e.what();
    fired = what.find("VK_ERROR_OUT_OF_DEVICE_MEMORY") != std::string::npos ||
            what.find("VK_ERROR_DEVICE_LOST") != std::string::npos;
    EXPECT_TRUE(fired) << "an unexpected error: " << what;
  }
  ctx.inject_faults({});
  EXPECT_EQ(ctx.memory_stats().allocated, before) << "the failed call kept device memory";
  EXPECT_EQ(ctx.validation_messages(), messages) << log.joined();
  return fired;
}

class InjectedFaultsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Context ctx(test_options(log_));
    reference_ = run(ctx);
    ASSERT_EQ(reference_.size(), kOptions.max_new_tokens);
  }
  // Fails the events of one kind one at a time (1, 2, 3, ...) on one context until a
  // run no longer reaches the armed one; then the context must still run correctly.
  void sweep_on_one_context(InjectedFaults (*at)(uint64_t), uint64_t at_least, const char* what) {
    Context ctx(test_options(log_));
    uint64_t n = 1;
    while (fails_cleanly(ctx, log_, at(n), reference_)) ++n;
    EXPECT_GT(n, at_least) << "too few " << what << " points";
    std::printf("[ faults   ] %llu %s points failed cleanly\n", (unsigned long long)(n - 1), what);
    EXPECT_EQ(run(ctx), reference_) << "the same context carries on";
  }
  MessageLog log_;
  std::vector<uint32_t> reference_;
};

// Every buffer request of a load and a generation, one at a time.
TEST_F(InjectedFaultsTest, EveryDeviceAllocationCanFail) {
  sweep_on_one_context([](uint64_t n) { return InjectedFaults{.device_allocation = n}; }, 3, "device-allocation");
}

// Every upload and download (each needs host memory), one at a time; a model load alone
// uploads every tensor.
TEST_F(InjectedFaultsTest, EveryHostAllocationCanFail) {
  sweep_on_one_context([](uint64_t n) { return InjectedFaults{.host_allocation = n}; }, 20, "host-allocation");
}

// The device lost at every submit: model load, encode, each decode submit. The context
// stays lost (every later call fails at once); a new context carries on.
TEST_F(InjectedFaultsTest, ADeviceLostAtAnySubmitNeedsANewContext) {
  uint64_t n = 1;
  for (;; ++n) {
    Context ctx(test_options(log_));
    if (!fails_cleanly(ctx, log_, {.submit = n}, reference_)) break;
    EXPECT_TRUE(ctx.device_lost());
    try {
      run(ctx);
      ADD_FAILURE() << "a lost context ran again";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("lost"), std::string::npos) << e.what();
    }
  }
  EXPECT_GT(n, 3u) << "load, encode and several decode submits";
  std::printf("[ faults   ] %llu submits lost the device cleanly\n", (unsigned long long)(n - 1));
  Context fresh(test_options(log_));
  EXPECT_EQ(run(fresh), reference_);
}

// Cancelled from another thread mid-generation: vkf::Cancelled, and the session runs on.
TEST_F(InjectedFaultsTest, CancellationMidGenerationAndUnderFaults) {
  Context ctx(test_options(log_));
  auto model = Model::load(ctx, kModel);
  Session session(model);
  std::atomic<bool> cancel{false};
  GenerateOptions o = kOptions;
  o.max_new_tokens = 48;
  o.max_steps_per_submit = 1;  // many submits: a cancellation lands between two of them
  o.cancel = &cancel;
  std::thread canceller([&] {
    while (ctx.counters().submits < 6) std::this_thread::yield();
    cancel = true;
  });
  EXPECT_THROW(session.generate({kSource}, o), Cancelled);
  canceller.join();
  EXPECT_EQ(session.generate({kSource}, kOptions)[0], reference_) << "the session carries on after a cancellation";

  // A fault and a cancellation together: whichever comes first is reported, nothing leaks.
  const uint64_t before = ctx.memory_stats().allocated;
  cancel = false;
  ctx.inject_faults({.device_allocation = 1, .host_allocation = 3});
  std::thread late([&] { cancel = true; });
  try {
    Session other(model);
    other.generate({kSource, kSource}, o);
    ADD_FAILURE() << "neither the faults nor the cancellation stopped it";
  } catch (const Cancelled&) {
  } catch (const std::bad_alloc&) {
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("VK_ERROR_OUT_OF_DEVICE_MEMORY"), std::string::npos) << e.what();
  }
  late.join();
  ctx.inject_faults({});
  EXPECT_EQ(ctx.memory_stats().allocated, before);
  EXPECT_EQ(session.generate({kSource}, kOptions)[0], reference_);
  EXPECT_EQ(ctx.validation_messages(), 0u) << log_.joined();
}

}  // namespace
}  // namespace vkf::test
