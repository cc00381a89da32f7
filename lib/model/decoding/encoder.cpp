// The public Encoder: checks what callers ask for, then runs the encoder graph over one
// sequence and, where the model has one, its pooler in the same submit.
#include "vkformer/encoder.hpp"

#include <cmath>

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
  Buffer ids, types, mask, x, y, qkv, attn, hidden, stats[2], out, pooled, transformed, logits;

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

void Encoder::set_profile(bool on) { impl_->graph.profile = on; }
const std::string& Encoder::profile_report() const { return impl_->graph.report; }

EncoderOutput Encoder::encode(const std::vector<uint32_t>& ids, const std::vector<uint32_t>& token_types) {
  return std::move(encode_batch({ids}, token_types.empty() ? std::vector<std::vector<uint32_t>>{}
                                                           : std::vector<std::vector<uint32_t>>{token_types})[0]);
}

std::vector<EncoderOutput> Encoder::encode_batch(const std::vector<std::vector<uint32_t>>& batch_ids,
                                                 const std::vector<std::vector<uint32_t>>& token_types) {
  const Model::Impl& m = impl_->model->impl();
  const ModelConfig& c = m.config;
  Context& ctx = m.ctx;
  if (batch_ids.empty()) fail_invalid_input("encode: no sequences");
  if (!token_types.empty() && token_types.size() != batch_ids.size())
    fail_invalid_input("encode: token types for " + std::to_string(token_types.size()) + " sequences, ids for " +
                       std::to_string(batch_ids.size()));
  size_t longest = 0;
  for (size_t b = 0; b < batch_ids.size(); ++b) {
    const auto& ids = batch_ids[b];
    const std::string item = batch_ids.size() > 1 ? "sequence " + std::to_string(b) + ": " : "";
    if (ids.empty()) fail_invalid_input("encode: " + item + "no token ids");
    if (ids.size() > c.max_position)
      fail_invalid_input("encode: " + item + std::to_string(ids.size()) + " tokens are more than the model's max_position " +
                         std::to_string(c.max_position));
    for (uint32_t id : ids)
      if (id >= c.src_vocab_size)
        fail_invalid_input("encode: " + item + "token id " + std::to_string(id) + " is outside the vocabulary of " +
                           std::to_string(c.src_vocab_size));
    const std::vector<uint32_t>* types = token_types.empty() || token_types[b].empty() ? nullptr : &token_types[b];
    if (types && types->size() != ids.size())
      fail_invalid_input("encode: " + item + std::to_string(types->size()) + " token types for " +
                         std::to_string(ids.size()) + " ids");
    if (types)
      for (uint32_t t : *types)
        if (t >= std::max(c.token_types, 1u))
          fail_invalid_input("encode: " + item + "token type " + std::to_string(t) + " is outside the model's " +
                             std::to_string(c.token_types) + " types");
    longest = std::max(longest, ids.size());
  }
  // Every item padded to the longest, the padding's keys masked ([B, L] additive, -inf);
  // positions count from each item's first token, so padding at the end moves none.
  const uint32_t B = uint32_t(batch_ids.size()), L = uint32_t(longest), n = B * L;
  const uint32_t D = c.d_model, W = c.attention_width(), e = dtype_bytes(m.dtype);
  std::vector<uint32_t> ids(n, c.pad_id), types(n, 0);
  bool padded = false;
  for (uint32_t b = 0; b < B; ++b) {
    std::copy(batch_ids[b].begin(), batch_ids[b].end(), ids.begin() + size_t(b) * L);
    if (!token_types.empty() && !token_types[b].empty())
      std::copy(token_types[b].begin(), token_types[b].end(), types.begin() + size_t(b) * L);
    padded = padded || batch_ids[b].size() < L;
  }
  Impl& s = *impl_;
  using model::ensure;
  ensure(ctx, s.ids, n, 4, "ids", BufferUse::HostAccess);                          // [B, L]
  ctx.upload(s.ids, ids.data(), uint64_t(n) * 4);
  ensure(ctx, s.types, n, 4, "token_types", BufferUse::HostAccess);                // [B, L]
  ctx.upload(s.types, types.data(), uint64_t(n) * 4);
  if (padded) {
    ensure(ctx, s.mask, n, e, "key_mask", BufferUse::HostAccess);                  // [B, L]
    std::vector<uint16_t> half(m.dtype == DType::F16 ? n : 0, 0);  // fp16 -inf: 0xfc00
    std::vector<float> full(m.dtype == DType::F16 ? 0 : n, 0.0f);
    for (uint32_t b = 0; b < B; ++b)
      for (size_t i = size_t(b) * L + batch_ids[b].size(); i < size_t(b + 1) * L; ++i) {
        if (half.empty()) full[i] = -INFINITY;
        else half[i] = 0xfc00;
      }
    if (half.empty()) ctx.upload(s.mask, full.data(), uint64_t(n) * 4);
    else ctx.upload(s.mask, half.data(), uint64_t(n) * 2);
  }
  ensure(ctx, s.x, uint64_t(n) * D, e, "x");                                       // [n, D]
  ensure(ctx, s.y, uint64_t(n) * D, e, "y");                                       // [n, D]
  ensure(ctx, s.qkv, uint64_t(n) * 3 * W, e, "qkv");                               // [n, 3W]
  ensure(ctx, s.attn, uint64_t(n) * W, e, "attn");                                 // [n, W]
  ensure(ctx, s.hidden, uint64_t(n) * c.dim_feedforward, e, "ffn_hidden");         // [n, FFN]
  ensure(ctx, s.out, uint64_t(n) * D, e, "last_hidden");                           // [n, D]
  ensure(ctx, s.pooled, uint64_t(B) * D, e, "pooled");                             // [B, D]
  const bool mlm = m.mlm_transform.out != 0, classifier = m.classifier.out != 0;
  const uint32_t logits_rows = mlm ? n : classifier ? B : 0, logits_cols = mlm ? c.src_vocab_size : m.classifier.out;
  if (mlm) ensure(ctx, s.transformed, uint64_t(n) * D * 2, e, "mlm_transformed");  // [n, D] twice
  if (logits_rows) ensure(ctx, s.logits, uint64_t(logits_rows) * logits_cols, e, "logits");
  const uint32_t parts = s.graph.row_stats_parts(n);
  if (parts)
    for (Buffer& b : s.stats) ensure(ctx, b, uint64_t(n) * parts * 4, 4, "row_stats");  // [n, parts, 4] fp32
  const model::EncoderBuffers b{s.x, s.y, s.qkv, s.attn, s.hidden, {parts ? s.stats[0] : Buffer{}, parts ? s.stats[1] : Buffer{}}};
  const model::EncoderInput input{
      .batch = B, .seq_len = L,
      .tokens = model::TokenInput{.ids = s.ids.view(), .table = m.src_embed.view(), .table_blocks = m.src_embed_blocks,
                                  .vocab = c.src_vocab_size, .positions = m.positions.view(),
                                  .max_positions = c.max_position,
                                  .mask = padded ? std::optional(s.mask.view()) : std::nullopt, .types = c.token_types,
                                  .type_ids = c.token_types ? std::optional(s.types.view()) : std::nullopt,
                                  .type_table = c.token_types ? std::optional(m.token_types.view()) : std::nullopt}};
  // What reads each item's first row (read in place, lda = L D): BERT's pooler
  // (pooled = tanh(h[b, 0] W^T + b)), or RoBERTa's and DistilBERT's classifier dense
  // layer, whose output is no pooled output; the classifier reads what it wrote.
  const bool pooler = m.pooler.out != 0;
  const model::Linear* first_row = pooler ? &m.pooler : m.classifier_dense.out ? &m.classifier_dense : nullptr;
  const Activation first_act = pooler ? Activation::Tanh : m.classifier_activation;
  const BufferView last = s.graph.run(input, b, s.out.view(), [&](CommandList& cl, const BufferView& hidden) {
    if (first_row) {  // [B, D]
      s.ops.gemm(cl, {.M = B, .N = D, .K = D, .trans_b = true, .act = first_act, .lda = L * D, .b_blocks = first_row->blocks},
                 {.a = hidden, .b = first_row->weight.view(), .c = s.pooled.view(), .bias = first_row->bias.view()});
      if (classifier) s.recorder(cl, B).linear(m.classifier, s.pooled.view(), s.logits.view());  // logits [B, labels]
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
  const Buffer& held = last.alloc == s.out.view().alloc ? s.out : last.alloc == s.x.view().alloc ? s.x : s.y;
  const std::vector<float> hidden = download_floats(ctx, held, uint64_t(n) * D, m.dtype);
  const std::vector<float> pooled = pooler ? download_floats(ctx, s.pooled, uint64_t(B) * D, m.dtype) : std::vector<float>{};
  const std::vector<float> logits =
      logits_rows ? download_floats(ctx, s.logits, uint64_t(logits_rows) * logits_cols, m.dtype) : std::vector<float>{};
  std::vector<EncoderOutput> out(B);
  for (uint32_t b = 0; b < B; ++b) {  // each item's own rows
    EncoderOutput& o = out[b];
    const uint32_t len = uint32_t(batch_ids[b].size());
    o.tokens = len, o.width = D;
    const auto rows = [&](const std::vector<float>& v, uint64_t first, uint64_t count, uint64_t width) {
      return std::vector<float>(v.begin() + first * width, v.begin() + (first + count) * width);
    };
    o.hidden = rows(hidden, uint64_t(b) * L, len, D);
    if (pooler) o.pooled = rows(pooled, b, 1, D);
    if (logits_rows) {
      o.logits_rows = mlm ? len : 1, o.logits_cols = logits_cols;
      o.logits = rows(logits, mlm ? uint64_t(b) * L : b, o.logits_rows, logits_cols);
    }
  }
  return out;
}

}  // namespace vkf
