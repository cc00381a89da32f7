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
  // [rows, parts, 4] fp32 each: partial statistics of the rows of x or y (RowStats) that
  // the fused layer's residual GEMMs write and its folded norms read, in turn; empty
  // where the device's GEMMs write none (encoder_row_stats_parts() == 0).
  Buffer stats[2];
};

// The partials per row the fused layer's residual GEMMs write for rows of width d_model
// (the size of EncoderBuffers::stats: rows * parts * 16 bytes), 0 where they write none.
uint32_t encoder_row_stats_parts(const Ops& ops, uint32_t rows, uint32_t d_model, uint32_t dim_feedforward);

struct EncoderShape {
  uint32_t batch = 1, seq_len = 1, heads = 1;
};

// x = sublayer(self-attention, x); x = sublayer(feed-forward, x). key_mask: additive
// [batch, seq_len] (padding), or none. 7 dispatches: each LayerNorm on its own.
void record_encoder_layer(const LayerRecorder& r, const EncoderLayer& layer, const EncoderShape& shape,
                          const EncoderBuffers& b, const std::optional<BufferView>& key_mask);

// Where a fused encoder stack's activations are between layers: the layer's output is
// `pending`'s LayerNorm of *x (post-norm: each layer's last norm is folded into the
// GEMMs of the next, or run by whatever reads the stack's output), or *x itself.
struct EncoderStream {
  const Buffer* x = nullptr;  // &b.x or &b.y of the EncoderBuffers passed to every layer
  const Norm* pending = nullptr;
  std::optional<RowStats> stats;  // of *x's rows, where the GEMM that wrote it wrote them
};

// The same layer in 5 dispatches (QKV projection, attention, output projection, FFN up,
// FFN down), each LayerNorm folded into the GEMMs that read its output: as an input
// (NormOf::A) and, post-norm, as the next sublayer's residual (NormOf::Residual).
// Pre-norm takes no pending norm (run it first).
EncoderStream record_encoder_layer_fused(const LayerRecorder& r, const EncoderLayer& layer, const EncoderShape& shape,
                                         const EncoderBuffers& b, const std::optional<BufferView>& key_mask,
                                         EncoderStream in);

}  // namespace vkf::model
