#pragma once
#include <atomic>
#include <memory>
#include <mutex>

#include "device.hpp"
#include "disk_cache.hpp"
#include "instance.hpp"
#include "log.hpp"
#include "memory.hpp"
#include "pipelines.hpp"
#include "vkformer/context.hpp"

namespace vkf {

struct Context::Impl : std::enable_shared_from_this<Context::Impl> {
  explicit Impl(const ContextOptions& options);
  ~Impl();

  void upload(const gpu::Allocation& dst, const void* data, uint64_t bytes, uint64_t offset);
  void download(const gpu::Allocation& src, void* data, uint64_t bytes, uint64_t offset);

  // One-shot command buffer for transfers, run to completion before returning.
  template <class Record>
  void run_transfer(Record&& record);

  // Orders a command buffer after everything submitted before it, host writes included.
  static void barrier_from_previous_work(VkCommandBuffer cb);
  void open_borrowed(const BorrowedVulkan& borrowed);
  // Makes a command buffer's writes visible to later submissions and to the host.
  static void barrier_to_later_work(VkCommandBuffer cb);

  ContextOptions options;
  mutable std::mutex policy_mutex;
  Policy policy;  // under policy_mutex
  gpu::Log log;
  std::unique_ptr<gpu::Instance> instance;
  std::unique_ptr<gpu::Device> device;
  std::unique_ptr<gpu::DiskCache> disk_cache;
  std::unique_ptr<gpu::Allocator> allocator;
  std::unique_ptr<gpu::Pipelines> pipelines;

  std::mutex transfer_mutex;
  VkCommandPool transfer_pool = VK_NULL_HANDLE;
  VkCommandBuffer transfer_cb = VK_NULL_HANDLE;
  VkFence transfer_fence = VK_NULL_HANDLE;
  std::unique_ptr<gpu::Block> upload_staging, download_staging;

  struct AtomicCounters {
    std::atomic<uint64_t> submits{0}, recordings{0}, dispatches{0}, transfers{0}, transfer_bytes{0};
  } counters;
};

}  // namespace vkf
