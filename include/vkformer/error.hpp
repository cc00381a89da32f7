#pragma once
#include <stdexcept>
#include <string>

namespace vkf {

// Every failure vkformer reports (bad input, missing device feature, Vulkan error,
// out of memory, shader compile error) is a vkf::Error whose message names what is wrong.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace vkf
