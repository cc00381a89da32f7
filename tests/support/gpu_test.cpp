#include "support/gpu_test.hpp"

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>

namespace vkf::test {

LogSink MessageLog::sink() {
  return [this](LogLevel level, std::string_view msg) {
    if (level < LogLevel::Warning) return;
    std::lock_guard lock(mutex);
    messages.emplace_back(msg);
  };
}

std::string MessageLog::joined() {
  std::lock_guard lock(mutex);
  std::string s;
  for (auto& m : messages) s += m + "\n";
  return s;
}

namespace {
// Scratch directories go when the test program exits.
struct ScratchDirs {
  std::mutex mutex;
  std::vector<std::filesystem::path> dirs;
  ~ScratchDirs() {
    std::error_code ec;
    for (auto& d : dirs) std::filesystem::remove_all(d, ec);
  }
} scratch;
}  // namespace

std::string scratch_dir(const std::string& tag) {
  auto dir = std::filesystem::temp_directory_path() /
             ("vkformer-test-" + tag + "-" + std::to_string(::getpid()) + "-" +
              std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()));
  std::filesystem::create_directories(dir);
  std::lock_guard lock(scratch.mutex);
  scratch.dirs.push_back(dir);
  return dir.string();
}

ContextOptions test_options(MessageLog& log) {
  ContextOptions o;
  o.validation = true;
  o.sync_validation = true;
  o.cache_dir = scratch_dir("cache");
  o.log = log.sink();
  return o;
}

std::unique_ptr<MessageLog> GpuTest::log_;
std::unique_ptr<Context> GpuTest::ctx_;

void GpuTest::SetUpTestSuite() {
  log_ = std::make_unique<MessageLog>();
  ctx_ = std::make_unique<Context>(test_options(*log_));
}

void GpuTest::TearDownTestSuite() {
  ctx_.reset();
  log_.reset();
}

void GpuTest::SetUp() {
  ASSERT_TRUE(ctx_->validation_enabled()) << "the Khronos validation layer is required for tests "
                                             "(apt-get install vulkan-validationlayers)";
  messages_before_ = ctx_->validation_messages();
}

void GpuTest::TearDown() {
  EXPECT_EQ(ctx_->validation_messages(), messages_before_) << "validation layer messages:\n" << log_->joined();
}

uint64_t test_seed() {
  if (const char* s = std::getenv("VKF_TEST_SEED")) return std::strtoull(s, nullptr, 10);
  static const uint64_t seed = std::random_device{}();
  return seed;
}

}  // namespace vkf::test
