#include "memory.hpp"

#include <algorithm>

namespace vkf {

namespace {
constexpr VkBufferUsageFlags kUsage =
    VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_STORAGE_TEXEL_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;

uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

std::string mib(uint64_t bytes) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1f MiB", double(bytes) / (1 << 20));
  return buf;
}
}  // namespace

std::string over_heap_budget(const HeapBudget& b, uint64_t bytes) {
  if (!b.reported || b.usage + bytes <= b.budget) return "";
  return "it would take this process's use of the device heap to " + mib(b.usage + bytes) + ", past the " +
         mib(b.budget) + " budget the driver gives it (VK_EXT_memory_budget; heap size " + mib(b.heap_size) +
         "; other programs and this one's own memory hold the rest): free memory, use fp16, or set "
         "ContextOptions::within_heap_budget = false to allocate past it";
}

namespace gpu {

// Every block's buffer: bound as storage and texel buffers, copied, and where the device
// has buffer addresses read through them (Capabilities::buffer_device_address).
VkBufferUsageFlags Allocator::usage() const {
  return kUsage | (device_.caps().buffer_device_address ? VK_BUFFER_USAGE_SHADER_DEVICE_ADDRESS_BIT : 0);
}

Allocation::~Allocation() {
  if (allocator) allocator->release(*this);
}

Allocator::Allocator(Device& device, bool direct, uint64_t block_bytes) : device_(device), direct_(direct) {
  const auto& caps = device.caps();
  // Every allocation starts where a storage or texel buffer view may (kernels bind
  // views of it from its start) and on a whole non-coherent atom.
  alignment_ = std::max<uint64_t>({16, caps.min_storage_buffer_offset_alignment, caps.min_texel_buffer_offset_alignment,
                                   caps.non_coherent_atom_size});
  block_bytes_ = align_up(std::max<uint64_t>(block_bytes, 1 << 20), alignment_);
  if (caps.max_memory_allocation_size) block_bytes_ = std::min(block_bytes_, caps.max_memory_allocation_size);

  // Which memory types can back a storage buffer: ask with a probe buffer.
  VkBufferCreateInfo info{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  info.size = 4096;
  info.usage = usage();
  VkBuffer probe;
  check(vkCreateBuffer(device.handle(), &info, nullptr, &probe), "vkCreateBuffer");
  VkMemoryRequirements req;
  vkGetBufferMemoryRequirements(device.handle(), probe, &req);
  vkDestroyBuffer(device.handle(), probe, nullptr);
  allowed_types_ = req.memoryTypeBits;
  alignment_ = std::max(alignment_, uint64_t(req.alignment));

  const VkMemoryPropertyFlags local = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
  const VkMemoryPropertyFlags mapped = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  if (direct_) {
    uint32_t t = find_type(local | VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT, mapped | VK_MEMORY_PROPERTY_HOST_CACHED_BIT,
                           allowed_types_);
    if (t == ~0u) direct_ = false;
    else type_ = t;
  }
  if (!direct_) {
    type_ = find_type(local, 0, allowed_types_);
    if (type_ == ~0u) type_ = find_type(0, 0, allowed_types_);
  }
  if (type_ == ~0u) throw Error("device '" + device.caps().name + "' has no memory type for storage buffers");
  if (!direct_)
    host_access_type_ = find_type(local | VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT, VK_MEMORY_PROPERTY_HOST_COHERENT_BIT,
                                  allowed_types_);
}

std::string Allocator::describe() const {
  const auto& mem = device_.memory_properties();
  auto type = [&](uint32_t t) {
    if (t == ~0u) return std::string("none");
    const VkMemoryPropertyFlags f = mem.memoryTypes[t].propertyFlags;
    std::string flags;
    for (auto [bit, name] : {std::pair{VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, "device-local"},
                             {VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT, "host-visible"},
                             {VK_MEMORY_PROPERTY_HOST_COHERENT_BIT, "coherent"},
                             {VK_MEMORY_PROPERTY_HOST_CACHED_BIT, "cached"}})
      if (f & bit) flags += (flags.empty() ? "" : "+") + std::string(name);
    const uint32_t h = mem.memoryTypes[t].heapIndex;
    return "type " + std::to_string(t) + " (" + (flags.empty() ? "no flags" : flags) + ", heap " + std::to_string(h) +
           " of " + mib(mem.memoryHeaps[h].size) + ")";
  };
  return std::string("memory: tensors in ") + type(type_) + (direct_ ? ", mapped" : "") + "; host-access buffers in " +
         type(direct_ ? type_ : host_access_type_) + "; " + std::to_string(mem.memoryTypeCount) + " types offered";
}

Allocator::~Allocator() {
  for (auto& b : blocks_) destroy_block(*b);
}

uint32_t Allocator::find_type(VkMemoryPropertyFlags required, VkMemoryPropertyFlags preferred, uint32_t allowed) const {
  const auto& mem = device_.memory_properties();
  uint32_t best = ~0u;
  int best_score = -1;
  for (uint32_t t = 0; t < mem.memoryTypeCount; ++t) {
    if (!(allowed & (1u << t))) continue;
    auto flags = mem.memoryTypes[t].propertyFlags;
    if ((flags & required) != required) continue;
    int score = __builtin_popcount(flags & preferred);
    if (score > best_score) {
      best = t;
      best_score = score;
    }
  }
  return best;
}

std::unique_ptr<Block> Allocator::create_block(uint64_t bytes, uint32_t type, bool map, std::string_view what) {
  auto b = std::make_unique<Block>();
  b->size = bytes;
  const auto& caps = device_.caps();
  if (caps.max_memory_allocation_size && bytes > caps.max_memory_allocation_size)
    throw Error("cannot allocate '" + std::string(what) + "' (" + mib(bytes) + "): larger than this device's " +
                "maxMemoryAllocationSize (" + mib(caps.max_memory_allocation_size) + ")",
                ErrorKind::OutOfMemory);
  if (within_budget_ && type == type_) {
    const std::string why = over_heap_budget(heap_budget(), bytes);
    if (!why.empty())
      throw Error("cannot allocate '" + std::string(what) + "' (" + mib(bytes) + " block): " + why, ErrorKind::OutOfMemory);
  }
  VkBufferCreateInfo info{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  info.size = bytes;
  info.usage = usage();
  check(vkCreateBuffer(device_.handle(), &info, nullptr, &b->buffer), "vkCreateBuffer");
  VkMemoryRequirements req;
  vkGetBufferMemoryRequirements(device_.handle(), b->buffer, &req);
  VkMemoryAllocateInfo alloc{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  VkMemoryAllocateFlagsInfo address_flags{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_FLAGS_INFO};
  address_flags.flags = VK_MEMORY_ALLOCATE_DEVICE_ADDRESS_BIT;
  if (device_.caps().buffer_device_address) alloc.pNext = &address_flags;  // its buffer has addresses
  alloc.allocationSize = req.size;
  alloc.memoryTypeIndex = type;
  VkResult r = vkAllocateMemory(device_.handle(), &alloc, nullptr, &b->memory);
  if (r != VK_SUCCESS) {
    vkDestroyBuffer(device_.handle(), b->buffer, nullptr);
    const auto& mem = device_.memory_properties();
    throw Error("out of device memory allocating '" + std::string(what) + "' (" + mib(bytes) + " block; " +
                mib(stats_.reserved) + " already held, heap size " +
                mib(mem.memoryHeaps[mem.memoryTypes[type].heapIndex].size) + "): " + result_name(r),
                ErrorKind::OutOfMemory);
  }
  check(vkBindBufferMemory(device_.handle(), b->buffer, b->memory, 0), "vkBindBufferMemory");
  if (device_.caps().buffer_device_address) {
    VkBufferDeviceAddressInfo where{VK_STRUCTURE_TYPE_BUFFER_DEVICE_ADDRESS_INFO};
    where.buffer = b->buffer;
    b->address = vkGetBufferDeviceAddress(device_.handle(), &where);
  }
  auto flags = device_.memory_properties().memoryTypes[type].propertyFlags;
  b->coherent = flags & VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  if (map) {
    void* p = nullptr;
    check(vkMapMemory(device_.handle(), b->memory, 0, VK_WHOLE_SIZE, 0, &p), "vkMapMemory");
    b->mapped = static_cast<uint8_t*>(p);
  }
  b->free[0] = bytes;
  return b;
}

void Allocator::destroy_block(Block& b) {
  if (b.mapped) vkUnmapMemory(device_.handle(), b.memory);
  vkDestroyBuffer(device_.handle(), b.buffer, nullptr);
  vkFreeMemory(device_.handle(), b.memory, nullptr);
  b = Block{};
}

HeapBudget Allocator::heap_budget() const {
  const auto& mem = device_.memory_properties();
  const uint32_t heap = mem.memoryTypes[type_].heapIndex;
  HeapBudget b;
  b.heap_size = b.budget = mem.memoryHeaps[heap].size;
  if (!device_.caps().memory_budget) return b;
  VkPhysicalDeviceMemoryBudgetPropertiesEXT budget{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_BUDGET_PROPERTIES_EXT};
  VkPhysicalDeviceMemoryProperties2 props{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_PROPERTIES_2};
  props.pNext = &budget;
  vkGetPhysicalDeviceMemoryProperties2(device_.physical().handle, &props);
  b.budget = budget.heapBudget[heap];
  b.usage = budget.heapUsage[heap];
  b.reported = true;
  return b;
}

std::unique_ptr<Block> Allocator::create_host_block(uint64_t bytes, bool host_read) {
  const VkMemoryPropertyFlags visible = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT;
  uint32_t t = find_type(visible, VK_MEMORY_PROPERTY_HOST_COHERENT_BIT | (host_read ? VK_MEMORY_PROPERTY_HOST_CACHED_BIT : 0),
                         allowed_types_);
  if (t == ~0u) throw Error("device '" + device_.caps().name + "' has no host-visible memory for staging");
  return create_block(align_up(bytes, alignment_), t, true, "staging");
}

std::shared_ptr<Allocation> Allocator::allocate(uint64_t bytes, std::string_view name, std::shared_ptr<void> owner,
                                               bool host_access) {
  if (bytes == 0) throw Error("buffer '" + std::string(name) + "' has size 0");
  const uint64_t reserved = align_up(bytes, alignment_);
  std::lock_guard lock(mutex_);
  if (limit_ && stats_.allocated + reserved > limit_)
    throw Error("buffer '" + std::string(name) + "' (" + std::to_string(bytes) + " bytes) would take vkformer's device " +
                "memory past its limit of " + std::to_string(limit_) + " bytes (" + std::to_string(stats_.allocated) +
                " bytes in use; the context's memory limit: memory_limit of vkf_context_options in C, of ContextOptions in C++)",
                ErrorKind::OutOfMemory);
  if (Device::fire(device_.faults.device_allocation))  // every buffer request is a point a driver could refuse
    throw Error("out of device memory allocating '" + std::string(name) + "' (" + mib(bytes) +
                "): VK_ERROR_OUT_OF_DEVICE_MEMORY (injected fault)",
                ErrorKind::OutOfMemory);
  Block* chosen = nullptr;
  uint64_t offset = 0;
  // The host-access pool: small blocks (the BAR window may be only 256 MiB), mapped.
  const bool pool = host_access && host_access_type_ != ~0u;
  const uint64_t block_bytes = pool ? std::min<uint64_t>(block_bytes_, 1 << 20) : block_bytes_;
  auto new_block = [&](uint64_t size) {
    blocks_.push_back(pool ? create_block(size, host_access_type_, true, name) : create_block(size, type_, direct_, name));
    blocks_.back()->host_access = pool;
    return blocks_.back().get();
  };
  if (reserved > block_bytes / 2) {
    // Large tensors get a block of their own, so they do not fragment the shared ones.
    chosen = new_block(reserved);
    chosen->dedicated = true;
  } else {
    for (auto& b : blocks_) {
      if (b->dedicated || b->host_access != pool) continue;
      for (auto& [off, size] : b->free)
        if (size >= reserved) {
          chosen = b.get();
          offset = off;
          break;
        }
      if (chosen) break;
    }
    if (!chosen) chosen = new_block(block_bytes);
  }
  auto it = chosen->free.find(offset);
  uint64_t free_size = it->second;
  chosen->free.erase(it);
  if (free_size > reserved) chosen->free[offset + reserved] = free_size - reserved;

  auto a = std::make_shared<Allocation>();
  a->allocator = this;
  a->owner = std::move(owner);
  a->block = chosen;
  a->offset = offset;
  a->size = bytes;
  a->reserved = reserved;
  a->name = name;
  stats_.allocated += reserved;
  stats_.peak = std::max(stats_.peak, stats_.allocated);
  stats_.reserved = 0;
  for (auto& b : blocks_) stats_.reserved += b->size;
  stats_.blocks = uint32_t(blocks_.size());
  return a;
}

void Allocator::release(Allocation& a) {
  std::lock_guard lock(mutex_);
  Block* b = a.block;
  stats_.allocated -= a.reserved;
  auto [it, ok] = b->free.emplace(a.offset, a.reserved);
  auto next = std::next(it);
  if (next != b->free.end() && it->first + it->second == next->first) {
    it->second += next->second;
    b->free.erase(next);
  }
  if (it != b->free.begin()) {
    auto prev = std::prev(it);
    if (prev->first + prev->second == it->first) {
      prev->second += it->second;
      b->free.erase(it);
    }
  }
  // Give back dedicated blocks at once and empty shared ones beyond the first.
  const bool empty = b->free.size() == 1 && b->free.begin()->second == b->size;
  size_t shared = std::count_if(blocks_.begin(), blocks_.end(),
                                [&](auto& x) { return !x->dedicated && x->host_access == b->host_access; });
  if (empty && (b->dedicated || shared > 1)) {
    auto pos = std::find_if(blocks_.begin(), blocks_.end(), [&](auto& x) { return x.get() == b; });
    destroy_block(**pos);
    blocks_.erase(pos);
  }
  stats_.reserved = 0;
  for (auto& blk : blocks_) stats_.reserved += blk->size;
  stats_.blocks = uint32_t(blocks_.size());
  a.allocator = nullptr;
}

MemoryStats Allocator::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

void Allocator::flush(const Block& b, uint64_t offset, uint64_t size) const {
  if (b.coherent) return;
  const uint64_t atom = std::max<uint64_t>(1, device_.caps().non_coherent_atom_size);
  VkMappedMemoryRange range{VK_STRUCTURE_TYPE_MAPPED_MEMORY_RANGE};
  range.memory = b.memory;
  range.offset = offset / atom * atom;
  range.size = std::min(align_up(offset + size, atom), b.size) - range.offset;
  check(vkFlushMappedMemoryRanges(device_.handle(), 1, &range), "vkFlushMappedMemoryRanges");
}

void Allocator::invalidate(const Block& b, uint64_t offset, uint64_t size) const {
  if (b.coherent) return;
  const uint64_t atom = std::max<uint64_t>(1, device_.caps().non_coherent_atom_size);
  VkMappedMemoryRange range{VK_STRUCTURE_TYPE_MAPPED_MEMORY_RANGE};
  range.memory = b.memory;
  range.offset = offset / atom * atom;
  range.size = std::min(align_up(offset + size, atom), b.size) - range.offset;
  check(vkInvalidateMappedMemoryRanges(device_.handle(), 1, &range), "vkInvalidateMappedMemoryRanges");
}

}  // namespace gpu
}  // namespace vkf
