#pragma once
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <span>
#include <string_view>
#include <vector>

#include "vkformer/buffer.hpp"
#include "vkformer/kernel.hpp"

namespace vkf {

namespace gpu { struct CommandListState; }

struct DispatchTiming {
  std::string label;
  Groups groups;
  double microseconds = 0;
  uint64_t start_tick = 0, end_tick = 0;
};

struct CommandListStats {
  uint32_t dispatches = 0, copies = 0, barriers = 0, submits = 0;
};

// Recorded GPU work. Barriers between dependent commands are inserted automatically
// from each argument's access: a command waits only on earlier commands that wrote
// what it reads, or touched what it writes. Record once, submit as often as needed.
class CommandList {
 public:
  CommandList(CommandList&&) noexcept;
  CommandList& operator=(CommandList&&) noexcept;
  ~CommandList();

  void dispatch(const Kernel& kernel, Groups groups, std::span<const Arg> args, const void* push = nullptr,
                uint32_t push_bytes = 0, std::string_view label = {});
  void dispatch(const Kernel& kernel, Groups groups, std::initializer_list<Arg> args, const void* push = nullptr,
                uint32_t push_bytes = 0, std::string_view label = {}) {
    dispatch(kernel, groups, std::span<const Arg>(args.begin(), args.size()), push, push_bytes, label);
  }
  template <class Push>
  void dispatch(const Kernel& kernel, Groups groups, std::initializer_list<Arg> args, const Push& push,
                std::string_view label = {}) {
    dispatch(kernel, groups, std::span<const Arg>(args.begin(), args.size()), &push, sizeof(Push), label);
  }
  template <class Push>
  void dispatch(const Kernel& kernel, Groups groups, std::span<const Arg> args, const Push& push,
                std::string_view label = {}) {
    dispatch(kernel, groups, args, &push, sizeof(Push), label);
  }
  void copy(const BufferView& src, const BufferView& dst);
  void fill(const BufferView& dst, uint32_t word);  // offset and size multiples of 4

  // Ends recording on first use, submits, and waits for the GPU to finish. With
  // times > 1 the list runs that many times back to back in one queue submission (one
  // wait), each run ordered after the one before; it must have been made repeatable
  // (CommandListOptions::repeatable) and not profiled. A recorded decode step whose
  // per-step state lives on the GPU advances itself this way, many tokens per submit.
  void submit(uint32_t times = 1);

  // Per-dispatch GPU times of the last submit (empty unless profiling was requested).
  const std::vector<DispatchTiming>& timings() const;
  std::string profile_report() const;
  CommandListStats stats() const;

  // Tests only: record without automatic barriers, to prove the barrier tests can fail.
  void set_auto_barriers(bool on);

 private:
  friend class Context;
  explicit CommandList(std::unique_ptr<gpu::CommandListState> s);
  std::unique_ptr<gpu::CommandListState> s_;
};

}  // namespace vkf
