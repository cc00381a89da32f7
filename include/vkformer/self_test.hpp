#pragma once
#include <string>

#include "vkformer/context.hpp"

namespace vkf {

struct SelfTestResult {
  bool passed = false;
  std::string detail;  // what was checked, or the first wrong element
  double microseconds = 0;
};

// Compiles shaders/self_test.comp, runs it over a few thousand elements on the
// context's device and checks every output against the CPU.
SelfTestResult self_test(Context& ctx);

}  // namespace vkf
