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
  bool (*applies)(const Capabilities&) = nullptr;  // a further condition on what the device reports
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
    // llvmpipe built for 512-bit vectors (LP_NATIVE_VECTOR_WIDTH=512 on an AVX-512 host:
    // 16 lanes a subgroup) returns zeros in lanes 8 to 15 from storage texel buffer loads
    // in kernels that use subgroups (Mesa 25.0.7, LLVM 15: every texel-reading GEMM and
    // attention test failed, with storage buffers they pass). Its default 256-bit build
    // (8 lanes) reads them right.
    {kMesa, 0, 0, "llvmpipe with more than 8 lanes: storage texel buffers not read (they lose lanes 8 and up)",
     [](Capabilities& c) { c.storage_texel_reads = false; },
     [](const Capabilities& c) { return c.cpu_driver && c.subgroup_size > 8; }},
};

}  // namespace

void apply_quirks(Capabilities& caps) {
  for (const Quirk& q : kQuirks) {
    if (q.vendor_id != caps.vendor_id) continue;
    if (q.device_id && q.device_id != caps.device_id) continue;
    if (q.below_driver && caps.driver_version >= q.below_driver) continue;
    if (q.applies && !q.applies(caps)) continue;
    q.apply(caps);
    caps.quirks.emplace_back(q.name);
  }
}

}  // namespace vkf::gpu
