// Moving bytes between the host and device buffers: a memcpy where the device memory
// is mapped (unified memory), else copies through a bounded staging block, so a
// tensor of any size moves with a fixed amount of host-visible memory.
#include <algorithm>
#include <cstring>
#include <new>

#include "context_impl.hpp"

namespace vkf {

namespace {
constexpr uint64_t kStagingBytes = 32ull << 20;
}

void Context::Impl::barrier_from_previous_work(VkCommandBuffer cb) {
  VkMemoryBarrier b{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  b.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT | VK_ACCESS_HOST_WRITE_BIT;
  b.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT |
                    VK_ACCESS_TRANSFER_WRITE_BIT;
  vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT | VK_PIPELINE_STAGE_HOST_BIT,
                       VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1, &b, 0, nullptr, 0,
                       nullptr);
}

void Context::Impl::barrier_to_later_work(VkCommandBuffer cb) {
  VkMemoryBarrier b{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  b.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  b.dstAccessMask = VK_ACCESS_HOST_READ_BIT | VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
                    VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                       VK_PIPELINE_STAGE_HOST_BIT | VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                       0, 1, &b, 0, nullptr, 0, nullptr);
}

template <class Record>
void Context::Impl::run_transfer(Record&& record) {
  gpu::check(vkResetCommandBuffer(transfer_cb, 0), "vkResetCommandBuffer");
  VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  gpu::check(vkBeginCommandBuffer(transfer_cb, &begin), "vkBeginCommandBuffer");
  barrier_from_previous_work(transfer_cb);
  record(transfer_cb);
  barrier_to_later_work(transfer_cb);
  gpu::check(vkEndCommandBuffer(transfer_cb), "vkEndCommandBuffer");
  device->submit_and_wait(transfer_cb, transfer_fence);
  counters.submits++;
}

static void check_range(const gpu::Allocation& a, uint64_t bytes, uint64_t offset, const char* what) {
  if (offset > a.size || bytes > a.size - offset)
    throw Error(std::string(what) + " of " + std::to_string(bytes) + " bytes at offset " + std::to_string(offset) +
                " does not fit buffer '" + a.name + "' of " + std::to_string(a.size) + " bytes");
}

void Context::Impl::upload(const gpu::Allocation& dst, const void* data, uint64_t bytes, uint64_t offset) {
  if (gpu::Device::fire(device->faults.host_allocation)) throw std::bad_alloc();  // injected
  check_range(dst, bytes, offset, "upload");
  if (bytes == 0) return;
  counters.transfers++;
  counters.transfer_bytes += bytes;
  gpu::Block& block = *dst.block;
  if (block.mapped) {
    // Every submit waits for its fence, so no GPU work is touching the buffer now.
    std::memcpy(block.mapped + dst.offset + offset, data, bytes);
    allocator->flush(block, dst.offset + offset, bytes);
    return;
  }
  std::lock_guard lock(transfer_mutex);
  if (!upload_staging) upload_staging = allocator->create_host_block(kStagingBytes, false);
  auto* src = static_cast<const uint8_t*>(data);
  for (uint64_t done = 0; done < bytes;) {
    const uint64_t n = std::min(bytes - done, upload_staging->size);
    std::memcpy(upload_staging->mapped, src + done, n);
    allocator->flush(*upload_staging, 0, n);
    run_transfer([&](VkCommandBuffer cb) {
      VkBufferCopy region{0, dst.offset + offset + done, n};
      vkCmdCopyBuffer(cb, upload_staging->buffer, block.buffer, 1, &region);
    });
    done += n;
  }
}

void Context::Impl::download(const gpu::Allocation& src, void* data, uint64_t bytes, uint64_t offset) {
  if (gpu::Device::fire(device->faults.host_allocation)) throw std::bad_alloc();  // injected
  check_range(src, bytes, offset, "download");
  if (bytes == 0) return;
  counters.transfers++;
  counters.transfer_bytes += bytes;
  gpu::Block& block = *src.block;
  if (block.mapped) {
    allocator->invalidate(block, src.offset + offset, bytes);
    std::memcpy(data, block.mapped + src.offset + offset, bytes);
    return;
  }
  std::lock_guard lock(transfer_mutex);
  if (!download_staging) download_staging = allocator->create_host_block(kStagingBytes, true);
  auto* out = static_cast<uint8_t*>(data);
  for (uint64_t done = 0; done < bytes;) {
    const uint64_t n = std::min(bytes - done, download_staging->size);
    run_transfer([&](VkCommandBuffer cb) {
      VkBufferCopy region{src.offset + offset + done, 0, n};
      vkCmdCopyBuffer(cb, block.buffer, download_staging->buffer, 1, &region);
    });
    allocator->invalidate(*download_staging, 0, n);
    std::memcpy(out + done, download_staging->mapped, n);
    done += n;
  }
}

}  // namespace vkf
