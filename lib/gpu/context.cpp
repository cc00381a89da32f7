#include <cstdlib>

#include "context_impl.hpp"

namespace vkf {

// A switch from the environment: unset, empty, 0 or off is off; 1 or on is on; anything
// else is an error naming the variable (checked like an option, never guessed).
static bool env_flag(const char* name) {
  const char* v = std::getenv(name);
  const std::string s = v ? v : "";
  if (s.empty() || s == "0" || s == "off") return false;
  if (s == "1" || s == "on") return true;
  throw Error(std::string(name) + " must be 1 (on) or 0 (off), not '" + s + "'");
}

Context::Impl::Impl(const ContextOptions& opts)
    : options(opts), policy(opts.policy ? *opts.policy : Policy::from_environment()), log(opts.log) {
  if (options.borrow) {
    open_borrowed(*options.borrow);
  } else {
    const bool validation = options.validation.value_or(env_flag("VKF_VALIDATION"));
    const bool sync = options.sync_validation.value_or(true);
    instance = std::make_unique<gpu::Instance>(validation, sync, log);

    std::vector<gpu::PhysicalDevice> devices;
    std::vector<Capabilities> caps;
    auto handles = instance->physical_devices();
    for (uint32_t i = 0; i < handles.size(); ++i) {
      devices.push_back(gpu::describe(handles[i], i, instance->api_version()));
      caps.push_back(devices.back().caps);
    }
    std::string choice = options.device;
    if (choice.empty())
      if (const char* env = std::getenv("VKF_DEVICE")) choice = env;
    const uint32_t chosen = choose_device(caps, choice);
    device = std::make_unique<gpu::Device>(*instance, std::move(devices[chosen]), policy.pipeline_stats);
  }
  std::string profile = options.profile;
  if (profile.empty())
    if (const char* env = std::getenv("VKF_PROFILE")) profile = env;
  if (profile == "portable") device->clamp_to_portable_profile();
  else if (!profile.empty()) throw Error("unknown profile '" + profile + "' (known: portable)");
  if (policy.emulate_coopmat) device->emulate_cooperative_matrices();
  log.info("using device [" + std::to_string(device->caps().index) + "] " + device->caps().name +
           (device->borrowed() ? " (borrowed from the application)" : ""));

  disk_cache = std::make_unique<gpu::DiskCache>(gpu::resolve_cache_dir(options), device->caps(), log);
  const bool direct = device->caps().unified_memory && !options.force_staging;
  allocator = std::make_unique<gpu::Allocator>(*device, direct, options.block_bytes);
  log.info(allocator->describe());
  allocator->set_limit(options.memory_limit);
  allocator->set_within_heap_budget(options.within_heap_budget);
  pipelines = std::make_unique<gpu::Pipelines>(*device, *disk_cache);

  VkDevice d = device->handle();
  VkCommandPoolCreateInfo pool{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  pool.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  pool.queueFamilyIndex = device->physical().queue_family;
  gpu::check(vkCreateCommandPool(d, &pool, nullptr, &transfer_pool), "vkCreateCommandPool");
  VkCommandBufferAllocateInfo cb{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  cb.commandPool = transfer_pool;
  cb.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  cb.commandBufferCount = 1;
  gpu::check(vkAllocateCommandBuffers(d, &cb, &transfer_cb), "vkAllocateCommandBuffers");
  VkFenceCreateInfo fence{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
  gpu::check(vkCreateFence(d, &fence, nullptr, &transfer_fence), "vkCreateFence");
}

void Context::Impl::open_borrowed(const BorrowedVulkan& b) {
  instance = std::make_unique<gpu::Instance>(static_cast<VkInstance>(b.instance), b.api_version,
                                             reinterpret_cast<PFN_vkGetInstanceProcAddr>(b.get_instance_proc_addr), log);
  if (!b.physical_device) throw Error("borrowed Vulkan objects: the physical device is null");
  const auto handles = instance->physical_devices();
  uint32_t index = 0;
  while (index < handles.size() && handles[index] != static_cast<VkPhysicalDevice>(b.physical_device)) ++index;
  if (index == handles.size()) throw Error("borrowed Vulkan objects: the physical device is not one of the instance's");
  device = std::make_unique<gpu::Device>(gpu::describe(handles[index], index, instance->api_version()), b);
  if (policy.pipeline_stats)
    log.warn("pipeline_stats: a borrowed device has only the features the application enabled; no pipeline "
                "statistics are read");
}

Context::Impl::~Impl() {
  if (!device) return;
  VkDevice d = device->handle();
  // Every submit of ours has been waited for; on a borrowed device, waiting for the whole
  // device would also wait for (and race with) the application's queues.
  if (!device->borrowed()) vkDeviceWaitIdle(d);
  if (upload_staging) allocator->destroy_block(*upload_staging);
  if (download_staging) allocator->destroy_block(*download_staging);
  vkDestroyFence(d, transfer_fence, nullptr);
  vkDestroyCommandPool(d, transfer_pool, nullptr);
  pipelines.reset();
  allocator.reset();
}

Context::Context(const ContextOptions& options) : impl_(std::make_shared<Impl>(options)) {}

Context::~Context() {
  try {
    save_caches();
  } catch (...) {
  }
}

const Capabilities& Context::capabilities() const { return impl_->device->caps(); }

Policy Context::policy() const {
  std::lock_guard lock(impl_->policy_mutex);
  return impl_->policy;
}

void Context::set_policy(const Policy& p) {
  std::lock_guard lock(impl_->policy_mutex);
  if (p.emulate_coopmat != impl_->policy.emulate_coopmat)
    throw Error("set_policy: emulate_coopmat is fixed when the context is made (ContextOptions::policy)");
  if (p.pipeline_stats != impl_->policy.pipeline_stats)
    throw Error("set_policy: pipeline_stats is fixed when the context is made (ContextOptions::policy)");
  impl_->policy = p;
}

Buffer Context::buffer(uint64_t bytes, std::string_view name, BufferUse use) {
  return Buffer(impl_->allocator->allocate(bytes, name, impl_, use == BufferUse::HostAccess));
}

void Context::upload(const Buffer& dst, const void* data, uint64_t bytes, uint64_t offset) {
  if (!dst) throw Error("upload into an empty Buffer handle");
  impl_->upload(*dst.alloc_, data, bytes, offset);
}

void Context::download(const Buffer& src, void* data, uint64_t bytes, uint64_t offset) {
  if (!src) throw Error("download from an empty Buffer handle");
  impl_->download(*src.alloc_, data, bytes, offset);
}

Kernel Context::kernel(const KernelDesc& desc) { return Kernel(impl_->pipelines->get(desc)); }

MemoryStats Context::memory_stats() const { return impl_->allocator->stats(); }
HeapBudget Context::heap_budget() const { return impl_->allocator->heap_budget(); }

void Context::inject_faults(const InjectedFaults& f) {
  impl_->device->faults.device_allocation = f.device_allocation;
  impl_->device->faults.host_allocation = f.host_allocation;
  impl_->device->faults.submit = f.submit;
}

bool Context::device_lost() const { return impl_->device->lost(); }
CacheStats Context::cache_stats() const { return impl_->disk_cache->stats(); }
uint64_t blocking_waits_on_this_thread() { return gpu::blocking_waits_this_thread; }

Counters Context::counters() const {
  auto& c = impl_->counters;
  return {c.submits, c.recordings, c.dispatches, c.transfers, c.transfer_bytes};
}
bool Context::direct_host_access() const { return impl_->allocator->direct(); }

uint64_t Context::device_address(const BufferView& v) const {
  if (!capabilities().buffer_device_address)
    throw Error("device '" + capabilities().name + "' gives kernels no buffer addresses (bufferDeviceAddress)");
  if (!v.alloc || v.alloc->allocator != impl_->allocator.get())
    throw Error("device_address: the view is empty or of another context's buffer");
  if (v.offset > v.alloc->size || v.size > v.alloc->size - v.offset)
    throw Error("device_address: the view lies outside its buffer '" + v.alloc->name + "'");
  return v.alloc->block->address + v.alloc->offset + v.offset;
}
bool Context::validation_enabled() const { return impl_->instance->validation(); }
uint64_t Context::validation_messages() const { return impl_->instance->messages(); }
std::string Context::cache_dir() const { return impl_->disk_cache->dir(); }
void Context::log(LogLevel level, std::string_view message) const { impl_->log(level, message); }
void Context::save_caches() { impl_->pipelines->save(); }

uint64_t Buffer::size() const { return alloc_ ? alloc_->size : 0; }
const std::string& Buffer::name() const {
  static const std::string empty;
  return alloc_ ? alloc_->name : empty;
}
BufferView Buffer::view(uint64_t offset, uint64_t size) const {
  if (!alloc_) throw Error("view of an empty Buffer handle");
  if (offset > alloc_->size)
    throw Error("view offset " + std::to_string(offset) + " is past the end of buffer '" + alloc_->name + "' (" +
                std::to_string(alloc_->size) + " bytes)");
  if (size == ~uint64_t(0)) size = alloc_->size - offset;
  if (size > alloc_->size - offset)
    throw Error("view [" + std::to_string(offset) + ", +" + std::to_string(size) + ") does not fit buffer '" +
                alloc_->name + "' (" + std::to_string(alloc_->size) + " bytes)");
  return {alloc_, offset, size};
}

const std::string& Kernel::name() const {
  static const std::string empty;
  return pipeline_ ? pipeline_->name : empty;
}

}  // namespace vkf
