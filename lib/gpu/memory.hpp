#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "device.hpp"
#include "vkformer/context.hpp"

namespace vkf::gpu {

// One VkDeviceMemory with one VkBuffer over all of it. Buffers are byte ranges of a
// block, so a descriptor is (block buffer, offset, size) and blocks are few.
struct Block {
  VkDeviceMemory memory = VK_NULL_HANDLE;
  VkBuffer buffer = VK_NULL_HANDLE;
  uint64_t size = 0;
  uint8_t* mapped = nullptr;  // set when the memory is host-visible
  uint64_t address = 0;       // the buffer's device address (Capabilities::buffer_device_address), else 0
  bool coherent = true;
  bool dedicated = false;         // holds exactly one large buffer
  bool host_access = false;       // of the pool for small buffers the host maps (Allocator::allocate)
  std::map<uint64_t, uint64_t> free;  // offset -> size, coalesced
};

class Allocator;

struct Allocation {
  Allocator* allocator = nullptr;
  std::shared_ptr<void> owner;  // keeps the context alive while the buffer lives
  Block* block = nullptr;
  uint64_t offset = 0, size = 0;  // size as asked; the range reserved may be larger
  uint64_t reserved = 0;
  std::string name;
  ~Allocation();
};

// Suballocates device buffers from large blocks, aligned for storage-buffer
// descriptors and for non-coherent flushes. On unified-memory devices the blocks are
// mapped and uploads are plain memcpy ("direct"); elsewhere they go through staging.
class Allocator {
 public:
  Allocator(Device& device, bool direct, uint64_t block_bytes);
  ~Allocator();

  // host_access: a small buffer the host writes or reads around every submit (token ids,
  // step state). Where device memory is not mapped as a whole (discrete GPUs) it comes
  // from device-local memory the host can map (a ReBAR or the 256 MiB BAR window), so its
  // uploads and downloads are a memcpy rather than a staging copy and a submit each; where
  // there is no such memory, from the usual blocks.
  std::shared_ptr<Allocation> allocate(uint64_t bytes, std::string_view name, std::shared_ptr<void> owner,
                                       bool host_access = false);
  void release(Allocation& a);
  MemoryStats stats() const;
  bool direct() const { return direct_; }
  // Which memory types hold tensors and host-access buffers, by flags and heap (VKF_LOG=info).
  std::string describe() const;
  // Live buffers may hold at most this many bytes (0: no limit): a game's memory budget.
  void set_limit(uint64_t bytes) { limit_ = bytes; }
  // Refuse device blocks past the driver's heap budget (ContextOptions::within_heap_budget).
  void set_within_heap_budget(bool on) { within_budget_ = on; }
  HeapBudget heap_budget() const;

  // A mapped host-visible block for staging copies (host_read: prefer cached memory).
  std::unique_ptr<Block> create_host_block(uint64_t bytes, bool host_read);
  void destroy_block(Block& b);

  void flush(const Block& b, uint64_t offset, uint64_t size) const;
  void invalidate(const Block& b, uint64_t offset, uint64_t size) const;

 private:
  std::unique_ptr<Block> create_block(uint64_t bytes, uint32_t type, bool map, std::string_view what);
  VkBufferUsageFlags usage() const;
  uint32_t find_type(VkMemoryPropertyFlags required, VkMemoryPropertyFlags preferred, uint32_t allowed) const;

  Device& device_;
  bool direct_;
  uint64_t block_bytes_;
  uint64_t alignment_;
  uint32_t type_ = 0;          // memory type of device blocks
  uint32_t host_access_type_ = ~0u;  // device-local and host-visible, for host_access buffers (~0u: none, or direct)
  uint32_t allowed_types_ = 0;  // memory types a storage buffer may live in
  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<Block>> blocks_;
  MemoryStats stats_;
  uint64_t limit_ = 0;  // set_limit
  bool within_budget_ = true;
};

}  // namespace vkf::gpu
