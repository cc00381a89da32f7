#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "vkformer/buffer.hpp"
#include "vkformer/capabilities.hpp"
#include "vkformer/command_list.hpp"
#include "vkformer/kernel.hpp"
#include "vkformer/policy.hpp"

namespace vkf {

enum class LogLevel { Debug, Info, Warning, Error };
// Where a buffer lives (Context::buffer).
enum class BufferUse { Device, HostAccess };
using LogSink = std::function<void(LogLevel, std::string_view)>;

// Vulkan objects an application lends to vkformer, so it runs on the device the app
// already has (a game's renderer, say). Handles are void* so this header needs no Vulkan
// headers (VkInstance, VkPhysicalDevice, VkDevice and VkQueue are pointers). vkformer
// destroys none of them and never waits for the whole device: the app destroys its
// objects after the Context, as usual.
struct BorrowedVulkan {
  void* instance = nullptr;         // VkInstance
  uint32_t api_version = 0;         // the instance's VkApplicationInfo::apiVersion (1.1 or newer)
  void* physical_device = nullptr;  // VkPhysicalDevice
  void* device = nullptr;           // VkDevice, created on physical_device
  uint32_t queue_family = 0;        // a queue family with compute
  void* queue = nullptr;            // VkQueue of that family
  // The VkPhysicalDeviceFeatures2 the device was created with (its pNext chain says
  // which optional features are on: 16-bit storage, bufferDeviceAddress on Vulkan 1.2
  // (the decode step's fast loads on CPU drivers), ...); null: none beyond Vulkan 1.1.
  const void* enabled_features = nullptr;
  std::vector<std::string> enabled_extensions;  // the device extensions it was created with
  // The app's vkGetInstanceProcAddr (PFN_vkGetInstanceProcAddr); null: the system loader's.
  void* get_instance_proc_addr = nullptr;
  // vkformer never submits while the app does: it calls lock_queue before each of its
  // queue submissions and unlock_queue after. Unset: an internal mutex (enough when the
  // app itself never touches this queue).
  std::function<void()> lock_queue, unlock_queue;
};

struct ContextOptions {
  // Which device: an index ("1") or a case-insensitive name substring ("llvmpipe").
  // Empty: the VKF_DEVICE environment variable, else the best device
  // (discrete > integrated > virtual > CPU).
  std::string device;
  // Khronos validation layer with messages routed to the log. Unset: VKF_VALIDATION=1.
  std::optional<bool> validation;
  // Also enable the layer's synchronization validation (missing barriers). Unset: on
  // whenever validation is on.
  std::optional<bool> sync_validation;
  // On-disk SPIR-V and pipeline caches. Unset: $VKF_CACHE_DIR, $XDG_CACHE_HOME/vkformer
  // or ~/.cache/vkformer; VKF_CACHE_DIR=off (or disk_cache=false) turns them off.
  std::optional<std::string> cache_dir;
  bool disk_cache = true;
  // Always copy through host-visible staging memory, even where device memory can be
  // mapped (unified memory). Mostly for testing the staging path.
  bool force_staging = false;
  // "portable": kernels choose as for a modest mobile GPU (16 KiB shared memory, 128
  // invocations, no subgroup arithmetic, a GPU's tile shapes), whatever the device.
  // Tests run the kernels this way too, so GPU code paths are exercised on lavapipe.
  // Unset: $VKF_PROFILE.
  std::string profile;
  // Run on the application's Vulkan device instead of creating one (device, validation
  // and sync_validation are then the app's business and ignored).
  std::optional<BorrowedVulkan> borrow;
  // The most device memory vkformer's buffers may hold, in bytes (0: no limit); an
  // allocation past it is an error naming the buffer. Context::memory_stats() reports use.
  uint64_t memory_limit = 0;
  // Stay within the budget the driver gives this process on the heap vkformer's buffers
  // live in (VK_EXT_memory_budget, where offered): a block that would take the heap's use
  // past it is an error, not an over-commitment that makes the driver evict the app's
  // other memory (a game's textures) and stutter. false: allocate past it.
  bool within_heap_budget = true;
  // Size of the device memory blocks buffers are carved from.
  uint64_t block_bytes = 64ull << 20;
  // The choices made by rule per device class that this context makes otherwise
  // (vkformer/policy.hpp). Unset: Policy::from_environment().
  std::optional<Policy> policy;
  LogSink log;  // default: warnings and errors to stderr (VKF_LOG=debug|info|warning|error)
};

struct MemoryStats {
  uint64_t allocated = 0;  // bytes in live buffers
  uint64_t peak = 0;       // high-water mark of allocated
  uint64_t reserved = 0;   // bytes of device memory held in blocks
  uint32_t blocks = 0;
};

// The heap vkformer's buffers live in, as the driver reports it (VK_EXT_memory_budget).
struct HeapBudget {
  uint64_t heap_size = 0;
  uint64_t budget = 0;  // what this process may use without hurting performance (heap_size when not reported)
  uint64_t usage = 0;   // what this process uses now, vkformer and the rest of it (0 when not reported)
  bool reported = false;  // the device offers VK_EXT_memory_budget
};
// Why `bytes` more would not fit `b` ("" when they do, or when no budget is reported).
std::string over_heap_budget(const HeapBudget& b, uint64_t bytes);

struct CacheStats {
  uint32_t spirv_hits = 0, spirv_misses = 0, spirv_rejected = 0;
  uint32_t compiled = 0;
  bool pipeline_cache_loaded = false;
};

// Work the context has done, counted in one place (per-token figures come from here).
struct Counters {
  uint64_t submits = 0, recordings = 0, dispatches = 0, transfers = 0, transfer_bytes = 0;
};

struct CommandListOptions {
  bool profile = false;     // GPU timestamps around every dispatch
  bool repeatable = false;  // may run several times in one submission (CommandList::submit(times))
};

// Test-only fault injection (Context::inject_faults): the nth event of a kind, counted
// from 1 after the call, fails as a driver or the host would report it. 0: never.
struct InjectedFaults {
  uint64_t device_allocation = 0;  // a buffer request fails with VK_ERROR_OUT_OF_DEVICE_MEMORY
  uint64_t host_allocation = 0;    // host memory for an upload or download: std::bad_alloc
  uint64_t submit = 0;             // vkQueueSubmit gives VK_ERROR_DEVICE_LOST; the context stays lost
};

// The device and everything that lives on it: memory, compiled kernels, caches.
// A Context is safe to share between threads; command lists are per thread.
class Context {
 public:
  explicit Context(const ContextOptions& options = {});
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  const Capabilities& capabilities() const;
  // The policy in force: ContextOptions::policy or the environment's, read once.
  Policy policy() const;
  // Replaces it for what is recorded from now on (not while another thread records on
  // this context). emulate_coopmat and pipeline_stats are fixed when the context is
  // made: a different value is an Error.
  void set_policy(const Policy& policy);

  // use: BufferUse::HostAccess for a small buffer the host writes or reads around every
  // submit (ids, a step's state): on a discrete GPU it lives in device memory the host
  // maps, so its transfers are a memcpy, not a copy submit each. Device: everything else.
  Buffer buffer(uint64_t bytes, std::string_view name = "buffer", BufferUse use = BufferUse::Device);
  void upload(const Buffer& dst, const void* data, uint64_t bytes, uint64_t offset = 0);
  void download(const Buffer& src, void* data, uint64_t bytes, uint64_t offset = 0);
  template <class T>
  void upload(const Buffer& dst, std::span<const T> data, uint64_t offset = 0) {
    upload(dst, data.data(), data.size_bytes(), offset);
  }
  template <class T>
  void download(const Buffer& src, std::span<T> data, uint64_t offset = 0) {
    download(src, data.data(), data.size_bytes(), offset);
  }

  Kernel kernel(const KernelDesc& desc);
  CommandList command_list(const CommandListOptions& options = {});

  MemoryStats memory_stats() const;
  HeapBudget heap_budget() const;
  CacheStats cache_stats() const;
  Counters counters() const;
  bool direct_host_access() const;  // uploads and downloads map device memory directly
  // Where a view starts, for kernels that read through buffer references
  // (GL_EXT_buffer_reference; Capabilities::buffer_device_address, else this throws).
  // Such reads are not bounds-checked: a kernel must stay inside the view it declares.
  uint64_t device_address(const BufferView& view) const;
  bool validation_enabled() const;
  uint64_t validation_messages() const;  // warnings and errors the layer reported so far
  std::string cache_dir() const;         // empty when the disk cache is off
  void log(LogLevel level, std::string_view message) const;  // through the context's log sink
  void save_caches();                    // also done on destruction
  // Test-only: arms the faults (replacing any still pending). A lost device stays lost:
  // every later submit fails at once and the application makes a new Context.
  void inject_faults(const InjectedFaults& faults);
  bool device_lost() const;

  struct Impl;

 private:
  std::shared_ptr<Impl> impl_;
};

// Every Vulkan device on this machine, in enumeration order, and which one a
// Context with these options would choose. Throws vkf::Error when Vulkan is missing.
std::vector<Capabilities> list_devices(const ContextOptions& options = {});
uint32_t choose_device(const std::vector<Capabilities>& devices, std::string_view choice);

const char* version();

// How many times the calling thread has waited on the host for the GPU (every submit,
// upload and download that has to). A frame loop that hands work to another thread
// (the C API's jobs) can check that its own calls never wait.
uint64_t blocking_waits_on_this_thread();

}  // namespace vkf
