// Running on an application's own Vulkan device (ContextOptions::borrow): what a game
// embedding vkformer does. The "application" here creates its instance (with the
// validation layer and its own messenger), device and queue through the Vulkan loader
// directly, lends them, and destroys them itself afterwards: any validation message, an
// object vkformer left behind on the device included, fails the test.
#include <cmath>
#include <filesystem>
#include <mutex>

#include "support/app_vulkan.hpp"
#include "support/gpu_test.hpp"

namespace vkf::test {
namespace {

ContextOptions borrowing(const BorrowedVulkan& b) {
  ContextOptions o;
  o.borrow = b;
  o.cache_dir = scratch_dir("borrowed-cache");
  return o;
}

TEST(Borrowed, TranslatesOnTheAppsDeviceAndDestroysNothingItWasLent) {
  AppVulkan app(true);
  ASSERT_TRUE(app.device) << "the test's own Vulkan device could not be created";
  std::mutex queue_mutex;
  int submits_under_the_apps_lock = 0;
  {
    BorrowedVulkan b = app.lend();
    b.lock_queue = [&] {
      queue_mutex.lock();
      ++submits_under_the_apps_lock;
    };
    b.unlock_queue = [&] { queue_mutex.unlock(); };
    Context ctx(borrowing(b));
    EXPECT_TRUE(ctx.capabilities().storage_16bit);
    const std::string dir = std::string(VKF_SOURCE_DIR_FOR_GPU_TESTS) + "/samples/dates";
    auto tokenizer = CharTokenizer::from_file(dir + "/vocab.json");
    for (DType precision : {DType::F32, DType::F16}) {
      auto model = Model::load(ctx, dir, precision);
      Session session(model);
      auto out = session.generate({tokenizer.encode("the 3rd of March 1998")}, {.max_new_tokens = 16});
      EXPECT_EQ(tokenizer.decode(out[0]), "1998-03-03") << to_string(precision);
    }
    EXPECT_GT(submits_under_the_apps_lock, 0);
  }
  // vkformer is gone; the app's device and queue still work, and the app destroys them.
  EXPECT_EQ(vkQueueWaitIdle(app.queue), VK_SUCCESS);
  app.destroy();
  EXPECT_EQ(app.messages.load(), 0) << "validation: " << app.last_message;
}

TEST(Borrowed, FeaturesTheAppDidNotEnableAreNotUsed) {
  AppVulkan app(false);  // no 16-bit storage on this device
  ASSERT_TRUE(app.device);
  {
    Context ctx(borrowing(app.lend()));
    EXPECT_FALSE(ctx.capabilities().storage_16bit);
    const std::string dir = std::string(VKF_SOURCE_DIR_FOR_GPU_TESTS) + "/samples/dates";
    try {
      Model::load(ctx, dir, DType::F16);
      FAIL() << "fp16 loaded on a device without 16-bit storage";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("16-bit storage"), std::string::npos) << e.what();
    }
    Session s(Model::load(ctx, dir, DType::F32));  // fp32 needs nothing optional
    EXPECT_FALSE(s.generate({{5, 6, 7}}, {.max_new_tokens = 3})[0].empty());
  }
  app.destroy();
  EXPECT_EQ(app.messages.load(), 0) << "validation: " << app.last_message;
}

// A device with the Vulkan memory model but not its Device scope cannot run kernels with
// Device-scope atomics (decode_attention's): refused by name at once, not a validation
// error (or undefined behaviour without the layer) at the first decode step.
TEST(Borrowed, AMemoryModelWithoutDeviceScopeIsRefusedByName) {
  AppVulkan app(true, /*memory_model_without_device_scope=*/true);
  if (!app.device) GTEST_SKIP() << "this device does not offer VK_KHR_vulkan_memory_model";
  try {
    Context ctx(borrowing(app.lend()));
    ADD_FAILURE() << "a device that forbids Device-scope atomics was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("vulkanMemoryModelDeviceScope"), std::string::npos) << e.what();
  }
  app.destroy();
  EXPECT_EQ(app.messages.load(), 0) << "validation: " << app.last_message;
}

// Buffer addresses (the decode-step GEMM's fp32 loads on CPU drivers that gather in
// hardware) only where the app enabled bufferDeviceAddress on its Vulkan 1.2 device, with
// shaderInt64 (the loads' 64-bit words): then a product forced through them is exact on
// the app's device, validation clean; else the capabilities are off and forcing them is
// refused by name.
TEST(Borrowed, BufferAddressesOnlyWhereTheAppEnabledThem) {
  for (bool enabled : {true, false}) {
    SCOPED_TRACE(enabled ? "bufferDeviceAddress enabled" : "not enabled");
    AppVulkan app(true, false, VK_API_VERSION_1_2, enabled);
    if (!app.device) GTEST_SKIP() << "this device offers no Vulkan 1.2 with bufferDeviceAddress";
    {
      Context ctx(borrowing(app.lend()));
      EXPECT_EQ(ctx.capabilities().buffer_device_address, enabled);
      VkPhysicalDeviceFeatures offered{};
      vkGetPhysicalDeviceFeatures(app.physical, &offered);
      EXPECT_EQ(ctx.capabilities().shader_int64, enabled && offered.shaderInt64);
      const uint32_t N = 5, K = 64;
      std::vector<float> a(K), b(N * K), nan(N, std::nanf(""));
      for (uint32_t i = 0; i < K; ++i) a[i] = float(int(i % 7) - 3);
      for (uint32_t i = 0; i < N * K; ++i) b[i] = float(int(i % 5) - 2);
      Buffer A = upload_floats(ctx, a, DType::F32, "A"), B = upload_floats(ctx, b, DType::F32, "B");
      Buffer C = upload_floats(ctx, nan, DType::F32, "C");
      Ops ops(ctx, DType::F32);
      Gemm g{.M = 1, .N = N, .K = K, .trans_b = true, .address_weights = true};
      auto cl = ctx.command_list();
      if (!enabled) {
        try {
          ops.gemm(cl, g, {.a = A.view(), .b = B.view(), .c = C.view()});
          ADD_FAILURE() << "read through addresses on a device lent without them";
        } catch (const Error& e) {
          EXPECT_NE(std::string(e.what()).find("bufferDeviceAddress"), std::string::npos) << e.what();
        }
      } else if (ctx.capabilities().subgroup_arithmetic) {  // (the address path is the subgroup kernel's)
        ops.gemm(cl, g, {.a = A.view(), .b = B.view(), .c = C.view()});
        cl.submit();
        const auto c = download_floats(ctx, C, N, DType::F32);
        for (uint32_t n = 0; n < N; ++n) {  // small integers: every sum exact in fp32
          double want = 0;
          for (uint32_t k = 0; k < K; ++k) want += double(a[k]) * b[n * K + k];
          EXPECT_EQ(c[n], want) << "column " << n;
        }
      }
    }
    app.destroy();
    EXPECT_EQ(app.messages.load(), 0) << "validation: " << app.last_message;
  }
}

TEST(Borrowed, BadLoansAreClearErrors) {
  AppVulkan app(true);
  ASSERT_TRUE(app.device);
  auto expect_error = [&](BorrowedVulkan b, const char* part) {
    try {
      Context ctx(borrowing(b));
      ADD_FAILURE() << "no error for: " << part;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
    }
  };
  BorrowedVulkan b = app.lend();
  b.api_version = VK_API_VERSION_1_0;
  expect_error(b, "needs 1.1 or newer");
  b = app.lend();
  b.queue_family = 99;
  expect_error(b, "queue family 99 does not exist");
  b = app.lend();
  b.device = nullptr;
  expect_error(b, "null");
  b = app.lend();
  b.physical_device = reinterpret_cast<void*>(uintptr_t(0x1234));
  expect_error(b, "not one of the instance's");
  b = app.lend();
  b.lock_queue = [] {};
  expect_error(b, "lock_queue and unlock_queue");
  app.destroy();
  EXPECT_EQ(app.messages.load(), 0) << "validation: " << app.last_message;
}

}  // namespace
}  // namespace vkf::test
