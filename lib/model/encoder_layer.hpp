#pragma once
// nn.TransformerEncoderLayer as recorded GPU work, shared by every architecture with an
// encoder (torch-seq2seq, torch-patch-forecaster).
#include "sublayer.hpp"

namespace vkf::model {

// Working memory of an encoder pass over batch x seq_len token rows (rows = batch * seq_len):
struct EncoderBuffers {
  Buffer x;       // [rows, D]    the layer's input, and its output
  Buffer y;       // [rows, D]    scratch
  Buffer qkv;     // [rows, 3D]   self-attention queries, keys and values
  Buffer attn;    // [rows, D]    attention output, heads side by side
  Buffer hidden;  // [rows, FFN]  feed-forward hidden layer
};

struct EncoderShape {
  uint32_t batch = 1, seq_len = 1, heads = 1;
};

// x = sublayer(self-attention, x); x = sublayer(feed-forward, x). key_mask: additive
// [batch, seq_len] (padding), or none.
void record_encoder_layer(const LayerRecorder& r, const EncoderLayer& layer, const EncoderShape& shape,
                          const EncoderBuffers& b, const std::optional<BufferView>& key_mask);

}  // namespace vkf::model
