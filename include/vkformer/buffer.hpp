#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace vkf {

namespace gpu { struct Allocation; }

// A byte range of a Buffer, as bound to a kernel or copied.
struct BufferView {
  std::shared_ptr<gpu::Allocation> alloc;
  uint64_t offset = 0;
  uint64_t size = 0;
};

enum class Access : uint8_t { Read = 1, Write = 2, ReadWrite = 3 };

// One kernel argument: a view and what the kernel does with it. The command list
// uses the access to decide where barriers go.
struct Arg {
  BufferView view;
  Access access;
};

// Device memory owned by a Context. Copies are cheap handles to the same memory;
// the memory returns to its block when the last handle goes.
class Buffer {
 public:
  Buffer() = default;
  uint64_t size() const;
  const std::string& name() const;
  explicit operator bool() const { return alloc_ != nullptr; }

  BufferView view(uint64_t offset = 0, uint64_t size = ~uint64_t(0)) const;
  Arg in() const { return {view(), Access::Read}; }
  Arg out() const { return {view(), Access::Write}; }
  Arg inout() const { return {view(), Access::ReadWrite}; }

 private:
  friend class Context;
  explicit Buffer(std::shared_ptr<gpu::Allocation> a) : alloc_(std::move(a)) {}
  std::shared_ptr<gpu::Allocation> alloc_;
};

inline Arg in(BufferView v) { return {std::move(v), Access::Read}; }
inline Arg out(BufferView v) { return {std::move(v), Access::Write}; }
inline Arg inout(BufferView v) { return {std::move(v), Access::ReadWrite}; }

}  // namespace vkf
