#include "kv_cache.hpp"

#include "buffers.hpp"

namespace vkf::model {

void KvCache::reserve(Context& ctx, DType dtype, uint32_t layers, uint32_t batch, uint32_t capacity,
                      uint32_t src_len, uint32_t d_model) {
  dtype_ = dtype;
  batch_ = batch;
  capacity_ = capacity;
  src_len_ = src_len;
  d_model_ = d_model;
  self_.resize(layers);
  cross_.resize(layers);
  spare_.resize(layers);
  for (uint32_t l = 0; l < layers; ++l) {
    ensure(ctx, self_[l], uint64_t(batch) * self_batch_stride(), dtype_bytes(dtype), "self_kv_cache");
    ensure(ctx, cross_[l], uint64_t(batch) * cross_batch_stride(), dtype_bytes(dtype), "cross_kv_cache");
  }
}

void KvCache::reorder(Context& ctx, const std::vector<uint32_t>& parent, uint32_t filled) {
  if (!filled) return;
  if (parent.size() > batch_ || filled > capacity_) throw Error("kv cache: reorder past the cache's shape");
  for (uint32_t p : parent)
    if (p >= batch_) throw Error("kv cache: parent sequence " + std::to_string(p) + " does not exist");
  const uint64_t used = uint64_t(filled) * row_stride();
  auto rows = [&](const Buffer& b, uint32_t sequence) { return elements(b, dtype_, sequence * self_batch_stride(), used); };
  // Gather into the spare cache, then copy back.
  CommandList cl = ctx.command_list();
  for (size_t l = 0; l < self_.size(); ++l) {
    ensure(ctx, spare_[l], uint64_t(batch_) * self_batch_stride(), dtype_bytes(dtype_), "self_kv_spare");
    for (uint32_t k = 0; k < parent.size(); ++k) cl.copy(rows(self_[l], parent[k]), rows(spare_[l], k));
    for (uint32_t k = 0; k < parent.size(); ++k) cl.copy(rows(spare_[l], k), rows(self_[l], k));
  }
  cl.submit();
}

}  // namespace vkf::model
