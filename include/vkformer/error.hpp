#pragma once
#include <stdexcept>
#include <string>

namespace vkf {

// What kind of failure an Error is, so an app can act on it (the C API's statuses).
enum class ErrorKind {
  Failed,        // anything else: a Vulkan error, a shader that does not compile, a malformed file
  NotFound,      // a file or directory that does not exist
  InvalidInput,  // the caller's data: ids outside the vocabulary, input longer than the model allows, text
                 // that is not UTF-8, a generation setting out of range
  Unsupported,   // a model family, a setting or a device feature vkformer does not run
  OutOfMemory,   // device or host memory, vkformer's memory limit or the driver's heap budget
  DeviceLost,    // the GPU stopped responding: the context must be created anew
  Cancelled,     // a generation cancelled by the caller
};

// Every failure vkformer reports (bad input, missing device feature, Vulkan error,
// out of memory, shader compile error) is a vkf::Error whose message names what is wrong,
// and whose kind says what sort of failure it is.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what, ErrorKind kind = ErrorKind::Failed) : std::runtime_error(what), kind_(kind) {}
  explicit Error(const char* what, ErrorKind kind = ErrorKind::Failed) : std::runtime_error(what), kind_(kind) {}
  ErrorKind kind() const { return kind_; }

 private:
  ErrorKind kind_;
};

// Throws an Error of that kind (the caller's data; what vkformer does not run).
[[noreturn]] inline void fail_invalid_input(const std::string& what) { throw Error(what, ErrorKind::InvalidInput); }
[[noreturn]] inline void fail_unsupported(const std::string& what) { throw Error(what, ErrorKind::Unsupported); }

}  // namespace vkf
