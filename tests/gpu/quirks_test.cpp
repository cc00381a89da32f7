// The vendor workaround table (lib/gpu/quirks.cpp) on described devices: each quirk
// applies where its vendor, device and condition say, and nowhere else.
#include <gtest/gtest.h>

#include <algorithm>

#include "physical_device.hpp"  // lib/gpu

namespace vkf::test {
namespace {

Capabilities llvmpipe(uint32_t lanes) {
  Capabilities c;
  c.vendor_id = 0x10005;  // Mesa
  c.type = DeviceType::Cpu;
  c.cpu_driver = true;
  c.subgroup_size = c.min_subgroup_size = c.max_subgroup_size = lanes;
  c.float16_arithmetic = true;
  return c;
}

bool names(const Capabilities& c, const char* part) {
  return std::any_of(c.quirks.begin(), c.quirks.end(), [&](const std::string& q) { return q.find(part) != q.npos; });
}

// llvmpipe's 512-bit build loses texel loads in lanes 8 to 15: texels are off there,
// on at its default 8 lanes (and narrower), and never touched on another vendor's device.
TEST(Quirks, TexelReadsOffOnlyWhereLlvmpipeRunsMoreThanEightLanes) {
  for (uint32_t lanes : {4u, 8u, 16u}) {
    Capabilities c = llvmpipe(lanes);
    gpu::apply_quirks(c);
    EXPECT_EQ(c.storage_texel_reads, lanes <= 8) << lanes << " lanes";
    EXPECT_EQ(names(c, "storage texel buffers"), lanes > 8) << lanes << " lanes";
    EXPECT_FALSE(c.float16_arithmetic);  // the software rasterizer's quirk, whatever its width
  }
  Capabilities gpu = llvmpipe(16);
  gpu.vendor_id = 0x8086;  // Intel, 16 lanes: its own driver, no quirk
  gpu.type = DeviceType::IntegratedGpu;
  gpu.cpu_driver = false;
  gpu::apply_quirks(gpu);
  EXPECT_TRUE(gpu.storage_texel_reads);
  EXPECT_TRUE(gpu.quirks.empty());
}

}  // namespace
}  // namespace vkf::test
