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

}  // namespace vkf::model
