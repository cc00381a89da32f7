#pragma once
// The decoder's attention caches: keys and values only (queries are never reused).
//
// Per decoder layer l, in elements of the model's storage type (D = d_model, heads side
// by side, head h at [h*d, (h+1)*d) of each half):
//   self(l)   [batch, capacity, 2D]  row (b, t) holds the keys of sequence b's token t at
//             [0, D) and its values at [D, 2D). Decoding token t writes row t; rows
//             [0, t] are what its self-attention reads.
//   cross(l)  [batch, src_len, 2D]   the same for the encoder's memory: written once per
//             source by encode, read by every decoding step.
#include <vector>

#include "vkformer/ops.hpp"

namespace vkf::model {

class KvCache {
 public:
  // Shapes the caches for a batch (buffers that are large enough are kept).
  // kv_width: the keys' (and values') width, kv_heads x head_dim (d_model but with grouped
  // K/V heads), each row holding keys then values.
  void reserve(Context& ctx, DType dtype, uint32_t layers, uint32_t batch, uint32_t capacity, uint32_t src_len,
               uint32_t kv_width);

  const Buffer& self(size_t layer) const { return self_[layer]; }
  const Buffer& cross(size_t layer) const { return cross_[layer]; }
  uint32_t capacity() const { return capacity_; }
  uint32_t src_len() const { return src_len_; }
  uint64_t row_stride() const { return 2ull * d_model_; }                            // both caches
  uint32_t kv_width() const { return d_model_; }                                      // values start here
  uint64_t self_batch_stride() const { return uint64_t(capacity_) * row_stride(); }  // per sequence
  uint64_t cross_batch_stride() const { return uint64_t(src_len_) * row_stride(); }

  // Beam search: sequence k continues from sequence parent[k]. Moves the self-attention
  // rows [0, filled) of every layer; the buffers stay where they are (recorded decode
  // steps refer to them). Cross-attention K/V are the same for every beam of a source.
  void reorder(Context& ctx, const std::vector<uint32_t>& parent, uint32_t filled);

 private:
  DType dtype_ = DType::F32;
  uint32_t batch_ = 0, capacity_ = 0, src_len_ = 0, d_model_ = 0;  // d_model_: the kv width
  std::vector<Buffer> self_, cross_, spare_;  // spare_: the gather target of reorder()
};

}  // namespace vkf::model
