#pragma once
#include <cstdlib>
#include <optional>
#include <string>
#include <gtest/gtest.h>

#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include "vkformer/vkformer.hpp"

namespace vkf::test {

// Collects what the validation layer says, so a failing test can print it.
struct MessageLog {
  std::mutex mutex;
  std::vector<std::string> messages;
  LogSink sink();
  std::string joined();
};

// Options for a test context: validation (with synchronization validation) on,
// required; SPIR-V cache in a scratch directory of its own.
ContextOptions test_options(MessageLog& log);
std::string scratch_dir(const std::string& tag);

// A fixture with one context per test suite; every test fails if the validation
// layer reported anything while it ran.
class GpuTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite();
  static void TearDownTestSuite();
  void SetUp() override;
  void TearDown() override;
  static Context& ctx() { return *ctx_; }

  static std::unique_ptr<MessageLog> log_;
  static std::unique_ptr<Context> ctx_;
  uint64_t messages_before_ = 0;
};

// A fresh seed per run, printed so a failure can be replayed (VKF_TEST_SEED=...).
uint64_t test_seed();
#define VKF_SEED_TRACE(seed) SCOPED_TRACE("seed " + std::to_string(seed) + " (rerun with VKF_TEST_SEED)")

// Sets an environment variable for a scope, restoring what it was (tests that compare
// how an environment variable is read).
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    ::setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (old_) ::setenv(name_, old_->c_str(), 1);
    else ::unsetenv(name_);
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

// Changes a context's policy for a scope, restoring what it was (tests that compare a
// policy's two settings on one context, such as Policy::fold_norms).
class ScopedPolicy {
 public:
  template <class Change>
  ScopedPolicy(Context& ctx, Change change) : ctx_(ctx), old_(ctx.policy()) {
    Policy p = old_;
    change(p);
    ctx.set_policy(p);
  }
  ~ScopedPolicy() { ctx_.set_policy(old_); }
  ScopedPolicy(const ScopedPolicy&) = delete;
  ScopedPolicy& operator=(const ScopedPolicy&) = delete;

 private:
  Context& ctx_;
  Policy old_;
};

}  // namespace vkf::test
