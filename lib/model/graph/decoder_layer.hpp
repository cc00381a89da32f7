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
  Buffer queries;  // [rows, W]    self- and cross-attention queries (W: DecoderPass's)
  Buffer attn;     // [rows, W]    attention output, heads side by side
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
  uint32_t batch = 1, n = 1, heads = 1, head_dim = 1;  // W = heads x head_dim: the attention's width
  uint32_t t0 = 0;
  std::optional<DecodeStep> step;
};

// Decoder layer `index` (its caches in `cache`) over the pass's rows of the stream (in
// b.x or b.y), as r.plan says: norms on their own (11 dispatches with cross-attention,
// 7 without) or folded into the GEMMs that read them (a prompt's 5, the rows' statistics
// handed on; a decode step's 8 with cross-attention, 6 with each attention's output
// projection in its dispatch: LayerPlan::StepAttention).
Stream record_decoder_layer(const LayerRecorder& r, const DecoderLayer& layer, size_t index, const DecoderPass& pass,
                            const DecoderBuffers& b, const KvCache& cache, Stream x);

}  // namespace vkf::model
