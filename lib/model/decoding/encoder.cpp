// The public Encoder: checks what callers ask for, then runs the encoder graph over one
// sequence and, where the model has one, its pooler in the same submit.
#include "vkformer/encoder.hpp"

#include "buffers.hpp"
#include "encoder_graph.hpp"
#include "model_impl.hpp"
#include "vkformer/tensor_io.hpp"

namespace vkf {

struct Encoder::Impl {
  std::shared_ptr<const Model> model;  // keeps the weights the graph reads alive
  Ops ops;
  Buffer tickets;  // zero: the post-norm products that normalise their own output (OutputNorm::tickets)
  model::EncoderGraph graph;
  Buffer ids, types, x, y, qkv, attn, hidden, stats[2], out, pooled, transformed, logits;

  explicit Impl(std::shared_ptr<const Model> m)
      : model(std::move(m)),
        ops(model->impl().ctx, model->impl().dtype),
        graph(model->impl().ctx, ops, model::encoder_stack(model->impl()),
              [this](CommandList& cl, uint32_t rows) { return recorder(cl, rows); }) {
    const uint32_t zero = 0;
    tickets = model->impl().ctx.buffer(4, "norm_tickets");
    model->impl().ctx.upload(tickets, &zero, 4);
  }

  model::LayerRecorder recorder(CommandList& cl, uint32_t rows) {
    const ModelConfig& c = model->config();
    return {.ops = ops, .cl = cl, .rows = rows, .d_model = c.d_model, .norm_first = c.norm_first,
            .eps = c.layer_norm_eps, .activation = c.activation, .norm_kind = c.norm_kind,
            .norm_tickets = tickets.view()};
  }
};

Encoder::Encoder(std::shared_ptr<const Model> model) {
  if (!model) throw Error("Encoder: no model");
  if (model->config().kind != ModelKind::EncoderOnly)
    throw Error("Encoder: model '" + model->config().architecture + "' is " + model->config().kind_name() +
                    ": Session runs it",
                ErrorKind::InvalidInput);
  impl_ = std::make_unique<Impl>(std::move(model));
}
Encoder::~Encoder() = default;

EncoderOutput Encoder::encode(const std::vector<uint32_t>& ids, const std::vector<uint32_t>& token_types) {
  const Model::Impl& m = impl_->model->impl();
  const ModelConfig& c = m.config;
  Context& ctx = m.ctx;
  if (ids.empty()) fail_invalid_input("encode: no token ids");
  if (ids.size() > c.max_position)
    fail_invalid_input("encode: " + std::to_string(ids.size()) + " tokens are more than the model's max_position " +
                       std::to_string(c.max_position));
  for (uint32_t id : ids)
    if (id >= c.src_vocab_size)
      fail_invalid_input("encode: token id " + std::to_string(id) + " is outside the vocabulary of " +
                         std::to_string(c.src_vocab_size));
  if (!token_types.empty() && token_types.size() != ids.size())
    fail_invalid_input("encode: " + std::to_string(token_types.size()) + " token types for " +
                       std::to_string(ids.size()) + " ids");
  for (uint32_t t : token_types)
    if (t >= std::max(c.token_types, 1u))
      fail_invalid_input("encode: token type " + std::to_string(t) + " is outside the model's " +
                         std::to_string(c.token_types) + " types");
  const uint32_t n = uint32_t(ids.size()), D = c.d_model, W = c.attention_width(), e = dtype_bytes(m.dtype);
  Impl& s = *impl_;
  using model::ensure;
  ensure(ctx, s.ids, n, 4, "ids", BufferUse::HostAccess);
  ctx.upload(s.ids, ids.data(), uint64_t(n) * 4);
  const std::vector<uint32_t> types = token_types.empty() ? std::vector<uint32_t>(n, 0) : token_types;
  ensure(ctx, s.types, n, 4, "token_types", BufferUse::HostAccess);
  ctx.upload(s.types, types.data(), uint64_t(n) * 4);
  ensure(ctx, s.x, uint64_t(n) * D, e, "x");                                       // [n, D]
  ensure(ctx, s.y, uint64_t(n) * D, e, "y");                                       // [n, D]
  ensure(ctx, s.qkv, uint64_t(n) * 3 * W, e, "qkv");                               // [n, 3W]
  ensure(ctx, s.attn, uint64_t(n) * W, e, "attn");                                 // [n, W]
  ensure(ctx, s.hidden, uint64_t(n) * c.dim_feedforward, e, "ffn_hidden");         // [n, FFN]
  ensure(ctx, s.out, uint64_t(n) * D, e, "last_hidden");                           // [n, D]
  ensure(ctx, s.pooled, D, e, "pooled");                                           // [D]
  const bool mlm = m.mlm_transform.out != 0, classifier = m.classifier.out != 0;
  const uint32_t logits_rows = mlm ? n : classifier ? 1 : 0, logits_cols = mlm ? c.src_vocab_size : m.classifier.out;
  if (mlm) ensure(ctx, s.transformed, uint64_t(n) * D * 2, e, "mlm_transformed");  // [n, D] twice
  if (logits_rows) ensure(ctx, s.logits, uint64_t(logits_rows) * logits_cols, e, "logits");
  const uint32_t parts = s.graph.row_stats_parts(n);
  if (parts)
    for (Buffer& b : s.stats) ensure(ctx, b, uint64_t(n) * parts * 4, 4, "row_stats");  // [n, parts, 4] fp32
  const model::EncoderBuffers b{s.x, s.y, s.qkv, s.attn, s.hidden, {parts ? s.stats[0] : Buffer{}, parts ? s.stats[1] : Buffer{}}};
  const model::EncoderInput input{
      .batch = 1, .seq_len = n,
      .tokens = model::TokenInput{.ids = s.ids.view(), .table = m.src_embed.view(), .table_blocks = m.src_embed_blocks,
                                  .vocab = c.src_vocab_size, .positions = m.positions.view(),
                                  .max_positions = c.max_position, .types = c.token_types,
                                  .type_ids = c.token_types ? std::optional(s.types.view()) : std::nullopt,
                                  .type_table = c.token_types ? std::optional(m.token_types.view()) : std::nullopt}};
  const bool pooler = m.pooler.out != 0;
  const BufferView last = s.graph.run(input, b, s.out.view(), [&](CommandList& cl, const BufferView& hidden) {
    const model::LayerRecorder r = s.recorder(cl, 1);
    if (pooler) {  // pooled [D] = tanh(h[0] W^T + b)
      r.linear(m.pooler, hidden, s.pooled.view(), Activation::Tanh);
      if (classifier) r.linear(m.classifier, s.pooled.view(), s.logits.view());  // logits [1, labels]
    }
    if (mlm) {  // logits [n, V] = LN(act(h W_t^T + b_t)) E^T + bias, E the word embeddings
      const model::LayerRecorder rows = s.recorder(cl, n);
      const BufferView t = model::elements(s.transformed, m.dtype, 0, uint64_t(n) * D),
                       normed = model::elements(s.transformed, m.dtype, uint64_t(n) * D);
      rows.linear(m.mlm_transform, hidden, t, c.activation);  // [n, D]
      rows.norm(m.mlm_norm, t, normed);                       // [n, D]
      s.ops.gemm(cl, {.M = n, .N = c.src_vocab_size, .K = D, .trans_b = true, .b_blocks = m.mlm_decoder.blocks},
                 {.a = normed, .b = m.mlm_decoder.weight.view(), .c = s.logits.view(), .bias = m.mlm_bias.view()});
    }
  });
  EncoderOutput o{.tokens = n, .width = D};
  const Buffer& held = last.alloc == s.out.view().alloc ? s.out : last.alloc == s.x.view().alloc ? s.x : s.y;
  o.hidden = download_floats(ctx, held, uint64_t(n) * D, m.dtype);
  if (pooler) o.pooled = download_floats(ctx, s.pooled, D, m.dtype);
  if (logits_rows) {
    o.logits_rows = logits_rows, o.logits_cols = logits_cols;
    o.logits = download_floats(ctx, s.logits, uint64_t(logits_rows) * logits_cols, m.dtype);
  }
  return o;
}

}  // namespace vkf
