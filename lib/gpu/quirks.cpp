// Per-vendor workarounds, in one table keyed by vendor, device and driver. Each entry
// says why it exists; kernels read the resulting Capabilities, never the vendor id.
#include <cstdint>
#include <string>

#include "physical_device.hpp"

namespace vkf::gpu {

namespace {

struct Quirk {
  uint32_t vendor_id;
  uint32_t device_id;           // 0: every device of the vendor
  uint32_t below_driver;        // 0: every driver version; else only older drivers
  const char* name;
  void (*apply)(Capabilities&);
};

constexpr uint32_t kQualcomm = 0x5143, kMesa = 0x10005, kApple = 0x106B;

const Quirk kQuirks[] = {
    // llvmpipe/lavapipe lowers fp16 arithmetic to fp32 with extra conversions: keep fp16
    // for storage (halves memory traffic) but do the math in fp32.
    {kMesa, 0, 0, "software-rasterizer: fp16 arithmetic disabled (emulated, slower than fp32)",
     [](Capabilities& c) { c.float16_arithmetic = false; }},
    // Adreno's proprietary driver has given wrong fp16 results on several driver
    // generations (ncnn keeps the same exclusion); fp16 storage stays.
    {kQualcomm, 0, 0, "adreno: fp16 arithmetic disabled (known miscompiles)",
     [](Capabilities& c) { c.float16_arithmetic = false; }},
    // MoltenVK translates to Metal, which has no cooperative matrix equivalent.
    {kApple, 0, 0, "moltenvk: cooperative matrices unavailable",
     [](Capabilities& c) { c.cooperative_matrix_nv = false; }},
};

}  // namespace

void apply_quirks(Capabilities& caps) {
  for (const Quirk& q : kQuirks) {
    if (q.vendor_id != caps.vendor_id) continue;
    if (q.device_id && q.device_id != caps.device_id) continue;
    if (q.below_driver && caps.driver_version >= q.below_driver) continue;
    q.apply(caps);
    caps.quirks.emplace_back(q.name);
  }
}

}  // namespace vkf::gpu
