#pragma once
// nn.TransformerDecoderLayer as recorded GPU work: masked self-attention over the KV
// cache, cross-attention over the encoder's memory, feed-forward, each a residual sublayer.
#include "kv_cache.hpp"
#include "sublayer.hpp"

namespace vkf::model {

// Working memory of a decoder pass over batch x n new tokens (rows = batch * n):
struct DecoderBuffers {
  Buffer x;        // [rows, D]    the layer's input, and its output
  Buffer y;        // [rows, D]    scratch
  Buffer queries;  // [rows, D]    self- and cross-attention queries
  Buffer attn;     // [rows, D]    attention output, heads side by side
  Buffer hidden;   // [rows, FFN]  feed-forward hidden layer
  BufferView src_mask;  // additive [batch, src_len]: -inf drops a padded source token
  // Decode steps: decode_attention's scratch, zero before the first step (tickets and
  // partial results; Ops::decode_attention_scratch_bytes for the larger of the two caches).
  BufferView attention_scratch;
  // Additive [batch, keys of the pass] (a decode step's: [batch, capacity]): a left-padded
  // decoder-only batch's padding, dropped as keys of self-attention; none without padding.
  std::optional<BufferView> self_mask;
  // Positions::Rotary: the rotary table (Ops::rope) queries and keys are rotated by after
  // their projection, its rows, and a left-padded batch's shifts ([batch] uint32).
  std::optional<BufferView> rope_table, position_shift;
  uint32_t rope_positions = 0;
};

// Which positions a pass decodes: n new tokens per sequence at positions [t0, t0 + n),
// or, with a decode step, one token per sequence at the position the step state holds
// (a pass recorded once and replayed at every position).
struct DecoderPass {
  uint32_t batch = 1, n = 1, heads = 1;
  uint32_t t0 = 0;
  std::optional<DecodeStep> step;
};

// Decoder layer `index` (its caches in `cache`) over the pass's rows of b.x.
void record_decoder_layer(const LayerRecorder& r, const DecoderLayer& layer, size_t index, const DecoderPass& pass,
                          const DecoderBuffers& b, const KvCache& cache);

// A decoder-only model's prompt pass (pre-norm, no cross-attention; n tokens per
// sequence at [t0, t0 + n)) in 5 dispatches, as the fused encoder: each LayerNorm folded
// into the GEMM that reads it. x_stats: statistics of b.x's rows where the last layer's
// GEMM wrote them; stats: two buffers of EncoderBuffers::stats's size that take turns
// (null or empty where the device writes none). Returns those of the layer's output.
std::optional<RowStats> record_decoder_layer_prompt(const LayerRecorder& r, const DecoderLayer& layer, size_t index,
                                                    const DecoderPass& pass, const DecoderBuffers& b,
                                                    const KvCache& cache, const std::optional<RowStats>& x_stats,
                                                    const Buffer* const stats[2]);

// Where a decode step's residual stream is between layers: the buffer (b.x or b.y)
// and, post-norm, the LayerNorm still to apply to it (the previous layer's last norm,
// folded into the GEMMs that read it; null for pre-norm and before the first layer).
struct StepStream {
  const Buffer* x = nullptr;  // &b.x or &b.y of the DecoderBuffers passed to every layer
  const Norm* pending = nullptr;
};

// The decoder layer for a decode step (one token per sequence, rows <= 4: the
// decode-step GEMM) in 6 dispatches: each LayerNorm folded into the GEMM that reads its
// output, each attention fused with its output projection and residual.
StepStream record_decoder_layer_step(const LayerRecorder& r, const DecoderLayer& layer, size_t index,
                                     const DecoderPass& pass, const DecoderBuffers& b, const KvCache& cache,
                                     StepStream in);

}  // namespace vkf::model
