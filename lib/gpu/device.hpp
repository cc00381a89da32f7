#pragma once
#include <atomic>
#include <functional>
#include <mutex>

#include "vkformer/context.hpp"

#include "instance.hpp"
#include "physical_device.hpp"

namespace vkf::gpu {

// Host waits for the GPU made by the calling thread (vkf::blocking_waits_on_this_thread).
extern thread_local uint64_t blocking_waits_this_thread;

// The logical device and its compute queue, opened with every optional feature the
// physical device offers that vkformer can use.
class Device {
 public:
  // pipeline_stats: Policy::pipeline_stats.
  Device(const Instance& instance, PhysicalDevice physical, bool pipeline_stats = false);
  // An application's device and queue (vkf::BorrowedVulkan): the capabilities are
  // narrowed to the features it was created with; nothing is destroyed or waited on
  // device-wide, and submissions go through the app's queue lock.
  Device(PhysicalDevice physical, const BorrowedVulkan& borrowed);
  ~Device();
  bool borrowed() const { return borrowed_; }
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  VkDevice handle() const { return device_; }
  const PhysicalDevice& physical() const { return physical_; }
  const Capabilities& caps() const { return physical_.caps; }
  const VkPhysicalDeviceMemoryProperties& memory_properties() const { return memory_; }

  // Narrows the capabilities kernels choose from (never widens them).
  void clamp_to_portable_profile();
  // Policy::emulate_coopmat: Capabilities::cooperative_matrix_emulated, and a quirk line saying so.
  void emulate_cooperative_matrices();

  // Submits one command buffer and waits for it; the queue is shared, so this locks.
  // Submits cb `times` times in one vkQueueSubmit (it needs SIMULTANEOUS_USE for more than one).
  void submit_and_wait(VkCommandBuffer cb, VkFence fence, uint32_t times = 1);

  // Injected faults (Context::inject_faults): fire(kind) is true for the armed call.
  struct Faults {
    std::atomic<uint64_t> device_allocation{0}, host_allocation{0}, submit{0};
  } faults;
  static bool fire(std::atomic<uint64_t>& countdown);
  bool lost() const { return lost_; }
  // Policy::pipeline_stats (VKF_PIPELINE_STATS=1) on a device with VK_KHR_pipeline_executable_properties: every
  // pipeline created reports the driver's statistics for it (registers, spills, shared
  // memory: what a kernel costs on that GPU) on stderr.
  bool pipeline_statistics() const { return pipeline_statistics_; }

 private:
  std::atomic<bool> lost_{false};
  PhysicalDevice physical_;
  VkPhysicalDeviceMemoryProperties memory_{};
  VkDevice device_ = VK_NULL_HANDLE;
  VkQueue queue_ = VK_NULL_HANDLE;
  std::mutex queue_mutex_;
  bool borrowed_ = false;
  bool pipeline_statistics_ = false;
  std::function<void()> lock_queue_, unlock_queue_;  // the app's, for a borrowed queue
};

}  // namespace vkf::gpu
