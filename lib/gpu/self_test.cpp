#include "vkformer/self_test.hpp"

#include <chrono>
#include <cmath>
#include <vector>

namespace vkf {

SelfTestResult self_test(Context& ctx) {
  SelfTestResult r;
  const uint32_t n = 4099;  // not a multiple of the workgroup size: the tail must be guarded
  const float a = 1.5f;
  std::vector<float> x(n), y(n, NAN);
  for (uint32_t i = 0; i < n; ++i) x[i] = float(i % 97) - 48.0f;

  auto t0 = std::chrono::steady_clock::now();
  Buffer bx = ctx.buffer(n * 4, "self_test.x"), by = ctx.buffer(n * 4, "self_test.y");
  ctx.upload(bx, std::span<const float>(x));
  ctx.upload(by, std::span<const float>(y));  // poison: an unwritten element stays NaN
  struct {
    uint32_t n;
    float a;
  } push{n, a};
  static_assert(sizeof push == 8, "matches Push in shaders/self_test.comp");
  Kernel k = ctx.kernel(
      {.shader = "self_test.comp", .bindings = 2, .push_constant_bytes = sizeof push, .spec_constants = {64}});
  CommandList cl = ctx.command_list();
  cl.dispatch(k, {(n + 63) / 64}, {bx.in(), by.out()}, push, "self_test");
  cl.submit();
  ctx.download(by, std::span<float>(y));
  r.microseconds = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();

  for (uint32_t i = 0; i < n; ++i) {
    const float want = a * x[i] + float(i);
    if (!(y[i] == want)) {
      r.detail = "element " + std::to_string(i) + " is " + std::to_string(y[i]) + ", expected " + std::to_string(want);
      return r;
    }
  }
  r.passed = true;
  r.detail = "y = 1.5*x + i over " + std::to_string(n) + " elements matches the CPU exactly";
  return r;
}

}  // namespace vkf
