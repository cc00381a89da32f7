// Device choice: by index, by name, through VKF_DEVICE, and the error for a missing one.
#include <cstdlib>

#include "support/gpu_test.hpp"

namespace vkf::test {
namespace {

Capabilities fake(uint32_t index, const char* name, DeviceType type) {
  Capabilities c;
  c.index = index;
  c.name = name;
  c.type = type;
  return c;
}

TEST(DeviceChoice, DefaultPrefersDiscreteThenIntegratedThenVirtualThenCpu) {
  std::vector<Capabilities> d = {fake(0, "llvmpipe", DeviceType::Cpu), fake(1, "Virt", DeviceType::VirtualGpu),
                                 fake(2, "Intel UHD", DeviceType::IntegratedGpu),
                                 fake(3, "NVIDIA H100", DeviceType::DiscreteGpu)};
  EXPECT_EQ(choose_device(d, ""), 3u);
  d.pop_back();
  EXPECT_EQ(choose_device(d, ""), 2u);
  d.pop_back();
  EXPECT_EQ(choose_device(d, ""), 1u);
  d.pop_back();
  EXPECT_EQ(choose_device(d, ""), 0u);
}

TEST(DeviceChoice, ByIndexAndCaseInsensitiveName) {
  std::vector<Capabilities> d = {fake(0, "llvmpipe (LLVM 15)", DeviceType::Cpu),
                                 fake(1, "AMD Radeon RX 7900", DeviceType::DiscreteGpu)};
  EXPECT_EQ(choose_device(d, "0"), 0u);
  EXPECT_EQ(choose_device(d, "1"), 1u);
  EXPECT_EQ(choose_device(d, "radeon"), 1u);
  EXPECT_EQ(choose_device(d, "LLVMPIPE"), 0u);
}

TEST(DeviceChoice, MissingDeviceErrorListsWhatExists) {
  std::vector<Capabilities> d = {fake(0, "llvmpipe (LLVM 15)", DeviceType::Cpu)};
  try {
    choose_device(d, "geforce");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no Vulkan device matches 'geforce'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("[0] llvmpipe (LLVM 15) (CPU)"), std::string::npos) << e.what();
  }
  try {
    choose_device(d, "7");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("device index 7 is out of range"), std::string::npos) << e.what();
  }
  EXPECT_THROW(choose_device({}, ""), Error);
}

// Against the real devices of this machine.
class RealDevices : public ::testing::Test {
 protected:
  void SetUp() override {
    devices = list_devices();
    ASSERT_FALSE(devices.empty());
    // A distinctive piece of the first device's name, e.g. "llvmpipe".
    name_part = devices[0].name.substr(0, devices[0].name.find(' '));
  }
  void TearDown() override { unsetenv("VKF_DEVICE"); }
  std::vector<Capabilities> devices;
  std::string name_part;
  MessageLog log;
};

TEST_F(RealDevices, ContextOpensDeviceByIndex) {
  auto o = test_options(log);
  o.device = "0";
  Context ctx(o);
  EXPECT_EQ(ctx.capabilities().index, 0u);
  EXPECT_EQ(ctx.capabilities().name, devices[0].name);
  EXPECT_EQ(ctx.validation_messages(), 0u) << log.joined();
}

TEST_F(RealDevices, ContextOpensDeviceByName) {
  auto o = test_options(log);
  o.device = name_part;
  Context ctx(o);
  EXPECT_NE(ctx.capabilities().name.find(name_part), std::string::npos);
  EXPECT_EQ(ctx.validation_messages(), 0u) << log.joined();
}

TEST_F(RealDevices, EnvironmentChoosesWhenOptionIsEmpty) {
  setenv("VKF_DEVICE", "no-such-gpu", 1);
  auto o = test_options(log);
  try {
    Context ctx(o);
    FAIL() << "VKF_DEVICE was ignored";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'no-such-gpu'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(devices[0].name), std::string::npos) << e.what();
  }
  setenv("VKF_DEVICE", name_part.c_str(), 1);
  Context ctx(o);
  EXPECT_EQ(ctx.capabilities().name, devices[0].name);
  // The API option wins over the environment.
  setenv("VKF_DEVICE", "no-such-gpu", 1);
  o.device = "0";
  Context ctx2(o);
  EXPECT_EQ(ctx2.capabilities().index, 0u);
}

TEST_F(RealDevices, CapabilitiesAreFilledIn) {
  const Capabilities& c = devices[0];
  EXPECT_FALSE(c.driver_name.empty());
  EXPECT_GT(c.max_shared_memory, 0u);
  EXPECT_GT(c.max_workgroup_invocations, 0u);
  EXPECT_GT(c.max_storage_buffer_range, 0u);
  EXPECT_GT(c.subgroup_size, 0u);
  EXPECT_GT(c.timestamp_period_ns, 0.0f);
  EXPECT_FALSE(c.heaps.empty());
}

// Unified memory is shared memory, not merely mappable memory: a discrete GPU with
// resizable BAR (every heap device-local and host-visible, as on an H100) is not unified.
TEST(MemoryClassification, DiscreteGpusAreNeverUnified) {
  const MemoryHeap local_mappable{.size = 1ull << 30, .device_local = true, .host_visible = true};
  const MemoryHeap local_only{.size = 1ull << 30, .device_local = true, .host_visible = false};
  const MemoryHeap host{.size = 1ull << 30, .device_local = false, .host_visible = true};
  EXPECT_FALSE(is_unified_memory(DeviceType::DiscreteGpu, {local_mappable}));          // resizable BAR
  EXPECT_FALSE(is_unified_memory(DeviceType::DiscreteGpu, {local_only, host}));         // classic discrete
  EXPECT_TRUE(is_unified_memory(DeviceType::IntegratedGpu, {local_mappable}));          // shared memory
  EXPECT_TRUE(is_unified_memory(DeviceType::Cpu, {local_mappable}));                    // lavapipe
  EXPECT_FALSE(is_unified_memory(DeviceType::IntegratedGpu, {local_only, host}));       // a carve-out the host cannot map
  EXPECT_FALSE(is_unified_memory(DeviceType::IntegratedGpu, {host}));                   // no device-local heap at all
}

}  // namespace
}  // namespace vkf::test
