// Recording, automatic barriers, submission and GPU timestamps.
//
// Barrier rule: every buffer range touched since the last barrier is remembered with
// whether it was written. A command that reads a range written since then, or writes
// a range read or written since then, gets one barrier first; the barrier covers all
// remembered writes and the list starts over. Independent commands get none.
#include <algorithm>
#include <cstdio>

#include "context_impl.hpp"

namespace vkf::gpu {

struct CommandListState {
  std::shared_ptr<Context::Impl> ctx;
  VkDevice device = VK_NULL_HANDLE;
  VkCommandPool pool = VK_NULL_HANDLE;
  VkCommandBuffer cb = VK_NULL_HANDLE;
  VkFence fence = VK_NULL_HANDLE;
  std::vector<VkDescriptorPool> descriptor_pools;
  std::vector<VkBufferView> texel_views;  // views of the bindings read as texel buffers
  uint32_t sets_left = 0;
  bool recording = true, profile = false, auto_barriers = true, repeatable = false;

  struct Touched {
    const Block* block;
    uint64_t begin, end;
    bool written;
  };
  std::vector<Touched> touched;
  std::vector<std::shared_ptr<Allocation>> keep_alive;  // buffers the recording refers to

  static constexpr uint32_t kQueriesPerPool = 256;
  std::vector<VkQueryPool> query_pools;
  uint32_t queries_used = kQueriesPerPool;
  struct Timed {
    std::string label;
    Groups groups;
    VkQueryPool pool;
    uint32_t query;
  };
  std::vector<Timed> timed;
  std::vector<DispatchTiming> timings;
  CommandListStats stats;

  ~CommandListState();
  using Uses = std::vector<std::pair<const BufferView*, Access>>;
  void record_barrier_if_needed(const Uses& uses);
  VkDescriptorSet allocate_set(VkDescriptorSetLayout layout);
  std::pair<VkQueryPool, uint32_t> next_queries();
  void require_recording(const char* what) const;
};

CommandListState::~CommandListState() {
  if (!device) return;
  for (auto p : descriptor_pools) vkDestroyDescriptorPool(device, p, nullptr);
  for (auto v : texel_views) vkDestroyBufferView(device, v, nullptr);  // before keep_alive lets the buffers go
  for (auto q : query_pools) vkDestroyQueryPool(device, q, nullptr);
  vkDestroyFence(device, fence, nullptr);
  vkDestroyCommandPool(device, pool, nullptr);
}

void CommandListState::require_recording(const char* what) const {
  if (!recording)
    throw Error(std::string("cannot ") + what + " after submit: a submitted command list is replayed as recorded");
}

void CommandListState::record_barrier_if_needed(const Uses& uses) {
  bool conflict = false;
  for (auto& [view, access] : uses) {
    const Block* block = view->alloc->block;
    const uint64_t begin = view->alloc->offset + view->offset, end = begin + view->size;
    const bool writes = uint8_t(access) & uint8_t(Access::Write);
    for (auto& t : touched)
      if (t.block == block && t.begin < end && begin < t.end && (t.written || writes)) conflict = true;
  }
  if (conflict && auto_barriers) {
    std::vector<VkBufferMemoryBarrier> barriers;
    for (auto& t : touched) {
      if (!t.written) continue;
      VkBufferMemoryBarrier b{VK_STRUCTURE_TYPE_BUFFER_MEMORY_BARRIER};
      b.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
      b.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT |
                        VK_ACCESS_TRANSFER_WRITE_BIT;
      b.srcQueueFamilyIndex = b.dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED;
      b.buffer = t.block->buffer;
      b.offset = t.begin;
      b.size = t.end - t.begin;
      barriers.push_back(b);
    }
    const VkPipelineStageFlags stages = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
    vkCmdPipelineBarrier(cb, stages, stages, 0, 0, nullptr, uint32_t(barriers.size()), barriers.data(), 0, nullptr);
    stats.barriers++;
    touched.clear();
  }
  for (auto& [view, access] : uses) {
    const uint64_t begin = view->alloc->offset + view->offset;
    touched.push_back({view->alloc->block, begin, begin + view->size, bool(uint8_t(access) & uint8_t(Access::Write))});
    keep_alive.push_back(view->alloc);
  }
}

VkDescriptorSet CommandListState::allocate_set(VkDescriptorSetLayout layout) {
  constexpr uint32_t kSets = 128, kMaxBindings = 16;
  if (sets_left == 0) {
    const VkDescriptorPoolSize sizes[] = {{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, kSets * kMaxBindings},
                                          {VK_DESCRIPTOR_TYPE_STORAGE_TEXEL_BUFFER, kSets * 2}};
    VkDescriptorPoolCreateInfo info{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
    info.maxSets = kSets;
    info.poolSizeCount = 2;
    info.pPoolSizes = sizes;
    VkDescriptorPool p;
    check(vkCreateDescriptorPool(device, &info, nullptr, &p), "vkCreateDescriptorPool");
    descriptor_pools.push_back(p);
    sets_left = kSets;
  }
  VkDescriptorSetAllocateInfo info{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
  info.descriptorPool = descriptor_pools.back();
  info.descriptorSetCount = 1;
  info.pSetLayouts = &layout;
  VkDescriptorSet set;
  check(vkAllocateDescriptorSets(device, &info, &set), "vkAllocateDescriptorSets");
  sets_left--;
  return set;
}

std::pair<VkQueryPool, uint32_t> CommandListState::next_queries() {
  if (queries_used + 2 > kQueriesPerPool) {
    VkQueryPoolCreateInfo info{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
    info.queryType = VK_QUERY_TYPE_TIMESTAMP;
    info.queryCount = kQueriesPerPool;
    VkQueryPool p;
    check(vkCreateQueryPool(device, &info, nullptr, &p), "vkCreateQueryPool");
    query_pools.push_back(p);
    // Reset inside the command buffer, so every replay starts from reset queries.
    vkCmdResetQueryPool(cb, p, 0, kQueriesPerPool);
    queries_used = 0;
  }
  uint32_t q = queries_used;
  queries_used += 2;
  return {query_pools.back(), q};
}

}  // namespace vkf::gpu

namespace vkf {

CommandList::CommandList(std::unique_ptr<gpu::CommandListState> s) : s_(std::move(s)) {}
CommandList::CommandList(CommandList&&) noexcept = default;
CommandList& CommandList::operator=(CommandList&&) noexcept = default;
CommandList::~CommandList() = default;

CommandList Context::command_list(const CommandListOptions& options) {
  auto s = std::make_unique<gpu::CommandListState>();
  s->ctx = impl_;
  s->device = impl_->device->handle();
  VkCommandPoolCreateInfo pool{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  pool.queueFamilyIndex = impl_->device->physical().queue_family;
  gpu::check(vkCreateCommandPool(s->device, &pool, nullptr, &s->pool), "vkCreateCommandPool");
  VkCommandBufferAllocateInfo cb{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  cb.commandPool = s->pool;
  cb.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  cb.commandBufferCount = 1;
  gpu::check(vkAllocateCommandBuffers(s->device, &cb, &s->cb), "vkAllocateCommandBuffers");
  VkFenceCreateInfo fence{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
  gpu::check(vkCreateFence(s->device, &fence, nullptr, &s->fence), "vkCreateFence");
  VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  // Listed several times in one submission, a command buffer is pending more than once.
  if (options.repeatable) begin.flags |= VK_COMMAND_BUFFER_USAGE_SIMULTANEOUS_USE_BIT;
  s->repeatable = options.repeatable;
  gpu::check(vkBeginCommandBuffer(s->cb, &begin), "vkBeginCommandBuffer");
  Impl::barrier_from_previous_work(s->cb);
  s->profile = options.profile;
  if (s->profile && impl_->device->caps().timestamp_valid_bits == 0) {
    impl_->log.warn("profiling requested but this device's compute queue has no timestamps; times are omitted");
    s->profile = false;
  }
  impl_->counters.recordings++;
  return CommandList(std::move(s));
}

void CommandList::dispatch(const Kernel& kernel, Groups groups, std::span<const Arg> args, const void* push,
                           uint32_t push_bytes, std::string_view label) {
  auto& s = *s_;
  s.require_recording("record a dispatch");
  if (!kernel) throw Error("dispatch of an empty Kernel handle");
  const gpu::Pipeline& p = *kernel.pipeline_;
  const auto& caps = s.ctx->device->caps();
  const std::string name = label.empty() ? p.name : std::string(label);
  if (args.size() != p.bindings)
    throw Error("dispatch of '" + name + "' got " + std::to_string(args.size()) + " buffers; the kernel binds " +
                std::to_string(p.bindings));
  if (push_bytes != p.push_constant_bytes)
    throw Error("dispatch of '" + name + "' got " + std::to_string(push_bytes) + " push-constant bytes; the kernel takes " +
                std::to_string(p.push_constant_bytes));
  const uint32_t g[3] = {groups.x, groups.y, groups.z};
  for (int i = 0; i < 3; ++i)
    if (g[i] == 0 || g[i] > caps.max_workgroup_count[i])
      throw Error("dispatch of '" + name + "' asks for " + std::to_string(g[i]) + " workgroups along axis " +
                  std::to_string(i) + "; this device allows 1 to " + std::to_string(caps.max_workgroup_count[i]));
  std::vector<VkDescriptorBufferInfo> infos;
  std::vector<VkBufferView> views(args.size(), VK_NULL_HANDLE);
  uint32_t binding = 0;
  for (auto& a : args) {
    const TexelFormat texel = p.texel_formats[binding++];
    if (!a.view.alloc) throw Error("dispatch of '" + name + "' got an empty buffer");
    if (a.view.size == 0) throw Error("dispatch of '" + name + "' got an empty view of '" + a.view.alloc->name + "'");
    const uint64_t start = a.view.alloc->offset + a.view.offset;
    if (texel != TexelFormat::None) {
      // A texel view: whole 16-byte texels from an aligned start, at most the device's count.
      if (a.access != Access::Read)
        throw Error("dispatch of '" + name + "': binding " + std::to_string(binding - 1) + " is read as texels; it cannot be written");
      if (start % std::max<uint64_t>(caps.min_texel_buffer_offset_alignment, 1))
        throw Error("view of '" + a.view.alloc->name + "' at offset " + std::to_string(a.view.offset) +
                    " is not aligned to minTexelBufferOffsetAlignment (" +
                    std::to_string(caps.min_texel_buffer_offset_alignment) + ")");
      const uint64_t texels = a.view.size / 16;
      if (texels == 0 || texels > caps.max_texel_buffer_elements)
        throw Error("view of '" + a.view.alloc->name + "' (" + std::to_string(a.view.size) + " bytes) holds " +
                    std::to_string(texels) + " 16-byte texels; '" + name + "' reads it as texels, of which this device " +
                    "allows 1 to " + std::to_string(caps.max_texel_buffer_elements) + " per view");
      VkBufferViewCreateInfo info{VK_STRUCTURE_TYPE_BUFFER_VIEW_CREATE_INFO};
      info.buffer = a.view.alloc->block->buffer;
      info.format = texel == TexelFormat::Rgba32F ? VK_FORMAT_R32G32B32A32_SFLOAT : VK_FORMAT_R32G32B32A32_UINT;
      info.offset = start;
      info.range = texels * 16;
      gpu::check(vkCreateBufferView(s.device, &info, nullptr, &views[binding - 1]), "vkCreateBufferView");
      s.texel_views.push_back(views[binding - 1]);
      infos.push_back({});
      continue;
    }
    if (a.view.size > caps.max_storage_buffer_range)
      throw Error("buffer '" + a.view.alloc->name + "' (" + std::to_string(a.view.size) + " bytes) is larger than this " +
                  "device's maxStorageBufferRange (" + std::to_string(caps.max_storage_buffer_range) +
                  " bytes) and cannot be bound to '" + name + "' whole; bind it in views of at most that size");
    if (start % caps.min_storage_buffer_offset_alignment)
      throw Error("view of '" + a.view.alloc->name + "' at offset " + std::to_string(a.view.offset) +
                  " is not aligned to minStorageBufferOffsetAlignment (" +
                  std::to_string(caps.min_storage_buffer_offset_alignment) + ")");
    infos.push_back({a.view.alloc->block->buffer, start, a.view.size});
  }
  // The whole dispatch is checked against earlier commands at once, so its own
  // arguments never force a barrier against each other.
  gpu::CommandListState::Uses uses;
  for (auto& a : args) uses.emplace_back(&a.view, a.access);
  s.record_barrier_if_needed(uses);

  VkDescriptorSet set = s.allocate_set(p.set_layout);
  std::vector<VkWriteDescriptorSet> writes(infos.size());
  for (uint32_t i = 0; i < infos.size(); ++i) {
    writes[i] = {VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
    writes[i].dstSet = set;
    writes[i].dstBinding = i;
    writes[i].descriptorCount = 1;
    if (views[i]) {
      writes[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_TEXEL_BUFFER;
      writes[i].pTexelBufferView = &views[i];
    } else {
      writes[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
      writes[i].pBufferInfo = &infos[i];
    }
  }
  vkUpdateDescriptorSets(s.device, uint32_t(writes.size()), writes.data(), 0, nullptr);

  vkCmdBindPipeline(s.cb, VK_PIPELINE_BIND_POINT_COMPUTE, p.pipeline);
  vkCmdBindDescriptorSets(s.cb, VK_PIPELINE_BIND_POINT_COMPUTE, p.layout, 0, 1, &set, 0, nullptr);
  if (push_bytes) vkCmdPushConstants(s.cb, p.layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, push_bytes, push);
  if (s.profile) {
    auto [pool, q] = s.next_queries();
    vkCmdWriteTimestamp(s.cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, pool, q);
    vkCmdDispatch(s.cb, groups.x, groups.y, groups.z);
    vkCmdWriteTimestamp(s.cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, pool, q + 1);
    s.timed.push_back({name, groups, pool, q});
  } else {
    vkCmdDispatch(s.cb, groups.x, groups.y, groups.z);
  }
  s.stats.dispatches++;
  s.ctx->counters.dispatches++;
}

void CommandList::copy(const BufferView& src, const BufferView& dst) {
  auto& s = *s_;
  s.require_recording("record a copy");
  if (!src.alloc || !dst.alloc) throw Error("copy with an empty buffer");
  if (src.size != dst.size)
    throw Error("copy from '" + src.alloc->name + "' (" + std::to_string(src.size) + " bytes) to '" + dst.alloc->name +
                "' (" + std::to_string(dst.size) + " bytes): sizes differ");
  if (src.size == 0) return;
  s.record_barrier_if_needed({{&src, Access::Read}, {&dst, Access::Write}});
  VkBufferCopy region{src.alloc->offset + src.offset, dst.alloc->offset + dst.offset, src.size};
  vkCmdCopyBuffer(s.cb, src.alloc->block->buffer, dst.alloc->block->buffer, 1, &region);
  s.stats.copies++;
}

void CommandList::fill(const BufferView& dst, uint32_t word) {
  auto& s = *s_;
  s.require_recording("record a fill");
  if (!dst.alloc) throw Error("fill of an empty buffer");
  if (dst.offset % 4 || dst.size % 4)
    throw Error("fill of '" + dst.alloc->name + "' needs offset and size in multiples of 4 bytes");
  if (dst.size == 0) return;
  s.record_barrier_if_needed({{&dst, Access::Write}});
  vkCmdFillBuffer(s.cb, dst.alloc->block->buffer, dst.alloc->offset + dst.offset, dst.size, word);
  s.stats.copies++;
}

void CommandList::submit(uint32_t times) {
  auto& s = *s_;
  if (times == 0) return;
  if (times > 1 && !s.repeatable)
    throw Error("submitting a command list " + std::to_string(times) +
                " times at once needs CommandListOptions::repeatable when it is made");
  if (times > 1 && s.profile) throw Error("a profiled command list runs once per submit");
  if (s.recording) {
    Context::Impl::barrier_to_later_work(s.cb);
    gpu::check(vkEndCommandBuffer(s.cb), "vkEndCommandBuffer");
    s.recording = false;
  }
  // Each run begins with a barrier on all earlier work (barrier_from_previous_work), so
  // run k + 1 sees everything run k wrote.
  s.ctx->device->submit_and_wait(s.cb, s.fence, times);
  s.stats.submits++;
  s.ctx->counters.submits++;

  s.timings.clear();
  if (!s.profile) return;
  const auto& caps = s.ctx->device->caps();
  const uint64_t mask = caps.timestamp_valid_bits >= 64 ? ~0ull : (1ull << caps.timestamp_valid_bits) - 1;
  for (auto& t : s.timed) {
    uint64_t ticks[2] = {};
    gpu::check(vkGetQueryPoolResults(s.device, t.pool, t.query, 2, sizeof ticks, ticks, sizeof(uint64_t),
                                     VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT),
               "vkGetQueryPoolResults");
    DispatchTiming d;
    d.label = t.label;
    d.groups = t.groups;
    d.start_tick = ticks[0] & mask;
    d.end_tick = ticks[1] & mask;
    d.microseconds = double(d.end_tick - d.start_tick) * caps.timestamp_period_ns / 1000.0;
    s.timings.push_back(d);
  }
}

const std::vector<DispatchTiming>& CommandList::timings() const { return s_->timings; }

std::string CommandList::profile_report() const {
  // The label column as wide as the longest label (a GEMM's names its variant and its
  // shape), at most 96 characters.
  int width = 32;
  for (auto& t : s_->timings) width = std::max(width, int(std::min<size_t>(t.label.size(), 96)));
  std::string out;
  char line[256];
  double total = 0;
  std::snprintf(line, sizeof line, "%-*s %18s %12s\n", width, "dispatch", "workgroups", "microseconds");
  out += line;
  for (auto& t : s_->timings) {
    char groups[64];
    std::snprintf(groups, sizeof groups, "%ux%ux%u", t.groups.x, t.groups.y, t.groups.z);
    std::snprintf(line, sizeof line, "%-*.*s %18s %12.1f\n", width, width, t.label.c_str(), groups, t.microseconds);
    out += line;
    total += t.microseconds;
  }
  std::snprintf(line, sizeof line, "%-*s %18s %12.1f\n", width, "total", "", total);
  return out + line;
}

CommandListStats CommandList::stats() const { return s_->stats; }

void CommandList::set_auto_barriers(bool on) { s_->auto_barriers = on; }

}  // namespace vkf
