#pragma once
// nn.TransformerEncoderLayer as recorded GPU work, shared by every architecture with an
// encoder (torch-seq2seq, torch-patch-forecaster).
#include "sublayer.hpp"

namespace vkf::model {

// Working memory of an encoder pass over batch x seq_len token rows (rows = batch * seq_len):
struct EncoderBuffers {
  Buffer x;       // [rows, D]    the layer's input, and its output
  Buffer y;       // [rows, D]    scratch
  Buffer qkv;     // [rows, 3W]   self-attention queries, keys and values (W: EncoderShape's)
  Buffer attn;    // [rows, W]    attention output, heads side by side
  Buffer hidden;  // [rows, FFN]  feed-forward hidden layer
  // [rows, parts, 4] fp32 each: partial statistics of the rows of x or y (RowStats) that
  // the residual GEMMs write and the folded norms read, in turn (LayerPlan::stats); empty
  // where norms are not folded or the device's GEMMs write none (encoder_row_stats_parts() == 0).
  Buffer stats[2];
};

// The partials per row the residual GEMMs write for rows of width d_model when norms are
// folded (the size of EncoderBuffers::stats: rows * parts * 16 bytes), 0 where they write none.
uint32_t encoder_row_stats_parts(const Ops& ops, uint32_t rows, uint32_t d_model, uint32_t dim_feedforward);

struct EncoderShape {
  uint32_t batch = 1, seq_len = 1, heads = 1, head_dim = 1;  // W = heads x head_dim: the attention's width
};

// x = sublayer(self-attention, x); x = sublayer(feed-forward, x), as r.plan says (norms
// on their own: 7 dispatches; folded: 5, the stream's pending norm and statistics handed
// on). key_mask: additive [batch, seq_len] (padding), or none. The stream is in b.x or b.y.
Stream record_encoder_layer(const LayerRecorder& r, const EncoderLayer& layer, const EncoderShape& shape,
                            const EncoderBuffers& b, const std::optional<BufferView>& key_mask, Stream x);

}  // namespace vkf::model
