#pragma once
// An encoder stack as recorded GPU work, whatever the model around it:
//
//   x      = input stage                      tokens, patches or features   [rows, D]
//   x      = LN_input(x)                      BART's layernorm_embedding    [rows, D]
//   x      = encoder_layer(x) for each layer                                [rows, D]
//   hidden = LN_final(x)                      nn.Transformer's encoder.norm [rows, D]
//
// rows = batch x seq_len. The last hidden state goes to the caller (its `then`: a
// decoder's cross-attention keys and values, a forecaster's head), recorded into the
// same last submit. The stack goes in submits of whole layers that fit a GPU-time budget.
#include <functional>
#include <string>

#include "encoder_layer.hpp"
#include "model_impl.hpp"

namespace vkf::model {

// What every layer of a stack shares.
struct EncoderSettings {
  uint32_t d_model = 1, heads = 1, head_dim = 1, dim_feedforward = 1;
  Activation activation = Activation::Relu;
  bool norm_first = false;
  float eps = 1e-5f;
  NormKind norm_kind = NormKind::LayerNorm;
};

// A stack's weights (borrowed from the model): its layers, the norm after the input
// stage and the one after the last layer (either may be absent).
struct EncoderStack {
  EncoderSettings settings;
  const std::vector<EncoderLayer>* layers = nullptr;
  const Norm* input_norm = nullptr;
  const Norm* final_norm = nullptr;
};

// A model's encoder stack as its config describes it (encoder-decoders, BERT).
EncoderStack encoder_stack(const Model::Impl& m);

// The input stages. Token ids [batch, seq_len] (uploaded, padded) looked up in a table
// (its rows in the storage type or llama.cpp's blocks), times `scale`, plus a positions
// table's rows and, with `types`, each token's type's row of a type table (fp32 [types,
// D]: BERT's token_type_embeddings; type_ids [batch, seq_len] uint32); `mask`: additive
// [batch, seq_len], padding's keys dropped.
struct TokenInput {
  BufferView ids, table;
  std::optional<BlockType> table_blocks;
  uint32_t vocab = 0;
  float scale = 1.0f;
  std::optional<BufferView> positions;
  uint32_t max_positions = 0;
  std::optional<BufferView> mask;
  uint32_t types = 0;
  std::optional<BufferView> type_ids, type_table;
};
// Rows of floats through a projection: row p of item b is `width` values of `series` from
// b * item_stride + p * stride (overlapping patches where stride < width, a forecaster's
// strided 1-D patches; features, or 2-D patches laid out (c, kh, kw) on the host, where
// stride = width), x = rows W^T + b + positions[p] ([seq_len, D], the same for every item).
struct RowInput {
  BufferView series;
  uint32_t width = 1, stride = 1, item_stride = 1;
  const Linear* projection = nullptr;
  BufferView positions;
};
// Images [batch, channels, height, width] (fp32, row-major) as the rows a RowInput reads
// (stride = width = channels x ph x pw): [batch, (height / ph) (width / pw), channels ph pw],
// patches in row-major order over the image's grid, each patch's values in (c, kh, kw)
// order, the order of a Conv2d weight [D, channels, ph, pw] read as a Linear weight [D,
// channels ph pw]: the rows through it are Conv2d(stride = kernel), ViT's patch embedding.
// Sizes that do not divide into whole patches are refused by name (Conv2d would drop
// the rest).
std::vector<float> image_patches(const std::vector<float>& images, uint32_t batch, uint32_t channels, uint32_t height,
                                 uint32_t width, uint32_t ph, uint32_t pw);

struct EncoderInput {
  uint32_t batch = 1, seq_len = 1;
  std::optional<TokenInput> tokens;  // one of the two
  std::optional<RowInput> rows;
};

class EncoderGraph {
 public:
  // recorder: a LayerRecorder for a list and a row count (the owner's tickets and scratch).
  using Recorder = std::function<LayerRecorder(CommandList&, uint32_t rows)>;
  EncoderGraph(Context& ctx, Ops& ops, EncoderStack stack, Recorder recorder);

  // Records and submits the stack over `in` in b (EncoderBuffers of batch x seq_len rows;
  // its stats buffers where norms fold and the device's GEMMs write row statistics:
  // row_stats_parts), the final (or a post-norm stack's pending) norm into `out` [rows, D];
  // `then` records what reads the last hidden state into the last submit. Returns the
  // last hidden state [batch x seq_len, D]: `out`, or b's buffer the last layer left it
  // in. Its pooled rows (each item's first token, BERT's [CLS]) are rows b x seq_len: a
  // head reads them in place, lda = seq_len x D.
  BufferView run(const EncoderInput& in, const EncoderBuffers& b, const BufferView& out,
                 const std::function<void(CommandList&, const BufferView& hidden)>& then = {});
  // The partials per row the folded norms take for `rows` rows (0: no stats buffers).
  uint32_t row_stats_parts(uint32_t rows) const;

  bool profile = false;
  double submit_budget_ms = 2.0;  // the GPU time one submit may take (0: no bound)
  // The last run's: per-dispatch GPU times (profile), wall time, submits, their GPU time
  // (profile; else 0), dispatches per layer.
  std::string report;
  double ms = 0, gpu_ms = 0, dispatches_per_layer = 0;
  uint32_t submits = 0;

 private:
  // How many of the stack's units (its layers, then the final norm with `then`) one
  // submit of `rows` rows can take within submit_budget_ms (0: all of them).
  uint32_t units_per_submit(uint32_t rows, uint32_t units) const;

  Context& ctx_;
  Ops& ops_;
  EncoderStack stack_;
  Recorder recorder_;
  double ms_per_unit_row_ = 0;  // measured by the last run: its submits' time / (units * rows)
};

}  // namespace vkf::model
