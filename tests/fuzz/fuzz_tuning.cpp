// libFuzzer target: the GEMM tuning file (parse_gemm_tuning), untrusted like the caches.
// It may only be used or ignored: never a crash, never tiles that cannot run on the
// device, and every file it accepts says the same again once written back.
#include <string>

#include "fuzz_input.hpp"
#include "vkformer/gemm_tuning.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const vkf::Capabilities caps = [] {
    vkf::Capabilities c;
    c.name = "fuzz device";
    c.max_shared_memory = 16384;  // the portable profile's limits
    c.max_workgroup_invocations = 128;
    c.max_workgroup_size = {128, 128, 64};
    // NV cooperative matrices offered, so those tiles can be accepted too.
    c.cooperative_matrix_nv = true;
    c.subgroup_size = c.min_subgroup_size = c.max_subgroup_size = 32;
    return c;
  }();
  const std::string identity = "vkformer fuzz; fuzz device";
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::string why;
  // The precision from the input's length, so both are reached (coopmat_nv is fp16 only).
  const vkf::DType precision = size % 2 ? vkf::DType::F16 : vkf::DType::F32;
  const auto tuning = vkf::parse_gemm_tuning(text, identity, caps, precision, &why);
  if (!tuning) {
    if (why.empty()) std::abort();  // a refusal says why
    return 0;
  }
  for (const auto& t : tuning->tiles)
    if (t && !vkf::gemm_tiles_problem(caps, *t, precision).empty()) std::abort();  // accepted tiles can run
  const auto again = vkf::parse_gemm_tuning(vkf::format_gemm_tuning(identity, *tuning), identity, caps, precision);
  if (!again || again->tiles != tuning->tiles) std::abort();
  return 0;
}
