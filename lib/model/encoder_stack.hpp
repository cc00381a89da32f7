#pragma once
// nn.TransformerEncoderLayer as recorded GPU work, shared by every architecture with
// an encoder (torch-seq2seq, torch-patch-forecaster).
#include <optional>

#include "model/seq2seq.hpp"

namespace vkf::model {

struct EncoderShape {
  uint32_t batch = 1, seq_len = 1;
  uint32_t d_model = 1, heads = 1;
  Activation activation = Activation::Relu;
  bool norm_first = false;
  float eps = 1e-5f;
};

// Working memory: x holds the layer's input and receives its output; y, qkv, attn and
// hidden are scratch of [rows, D], [rows, 3D], [rows, D] and [rows, FFN].
struct EncoderBuffers {
  Buffer x, y, qkv, attn, hidden;
};

void record_encoder_layer(Ops& ops, CommandList& cl, const EncoderLayer& layer, const EncoderShape& shape,
                          const EncoderBuffers& buffers, const std::optional<BufferView>& key_mask);

}  // namespace vkf::model
