// The torch-seq2seq forward pass, layer by layer, as nn.Transformer computes it:
//   post-norm: x = LN(x + SelfAttn(x)); [x = LN(x + CrossAttn(x, memory))]; x = LN(x + FFN(x))
//   pre-norm:  x = x + SelfAttn(LN(x)); [x = x + CrossAttn(LN(x), memory)]; x = x + FFN(LN(x))
// followed by the stack's final LayerNorm. Residual adds ride in the GEMM epilogues.
#include "model/session.hpp"

#include <cmath>
#include <cstring>

#include "model/encoder_stack.hpp"
#include "model/tensor_io.hpp"

namespace vkf {

Session::Impl::Impl(std::shared_ptr<const Model> mdl)
    : model(std::move(mdl)), m(model->impl()), ctx(m.ctx), ops(m.ctx, m.dtype) {}

Buffer& Session::Impl::ensure(Buffer& b, uint64_t elements, const char* name, uint32_t elem_bytes) {
  const uint64_t bytes = std::max<uint64_t>(elements, 1) * (elem_bytes ? elem_bytes : dtype_bytes(m.dtype));
  if (!b || b.size() < bytes) b = ctx.buffer(bytes, name);
  return b;
}

BufferView Session::Impl::at(const Buffer& b, uint64_t element) const {
  return b.view(element * dtype_bytes(m.dtype));
}

void Session::Impl::linear(CommandList& cl, const Linear& l, const BufferView& in, uint32_t rows, const BufferView& out,
                           Activation act, std::optional<BufferView> residual) {
  ops.gemm(cl, {.M = rows, .N = l.out, .K = l.in, .trans_b = true, .act = act}, in, l.weight.view(), out,
           l.bias.view(), residual);
}

void Session::Impl::norm(CommandList& cl, const Norm& n, const BufferView& in, uint32_t rows, const BufferView& out) {
  ops.layer_norm(cl, {.rows = rows, .cols = m.config.d_model, .eps = m.config.layer_norm_eps}, in, n.gamma.view(),
                 n.beta.view(), out);
}

CommandList Session::Impl::begin() { return ctx.command_list({.profile = profile}); }

void Session::Impl::finish(CommandList& cl, std::string& report) {
  cl.submit();
  if (profile) report = cl.profile_report();
}

static uint16_t neg_inf_half() { return 0xfc00; }

void Session::Impl::encode(const std::vector<std::vector<uint32_t>>& sources, uint32_t copies,
                           uint32_t target_capacity) {
  const ModelConfig& c = m.config;
  if (sources.empty()) throw Error("no source sequences given");
  src_len = 0;
  for (size_t s = 0; s < sources.size(); ++s) {
    if (sources[s].empty()) throw Error("source " + std::to_string(s) + " is empty");
    if (sources[s].size() > c.max_position)
      throw Error("source " + std::to_string(s) + " has " + std::to_string(sources[s].size()) +
                  " tokens, more than the model's max_position " + std::to_string(c.max_position));
    for (uint32_t id : sources[s])
      if (id >= c.src_vocab_size)
        throw Error("source " + std::to_string(s) + " has token id " + std::to_string(id) +
                    ", outside the source vocabulary of " + std::to_string(c.src_vocab_size));
    src_len = std::max<uint32_t>(src_len, uint32_t(sources[s].size()));
  }
  if (target_capacity > c.max_position)
    throw Error("decoding " + std::to_string(target_capacity) + " target positions exceeds the model's max_position " +
                std::to_string(c.max_position));
  step_list.reset();  // it refers to buffers that may be reallocated below
  batch = uint32_t(sources.size()) * copies;
  capacity = target_capacity;
  const uint32_t D = c.d_model, S = src_len, rows = batch * S;

  // Ids padded with pad_id; the mask drops every pad_id key, as src == pad_id does in PyTorch.
  std::vector<uint32_t> ids(rows, c.pad_id);
  for (size_t s = 0; s < sources.size(); ++s)
    for (uint32_t k = 0; k < copies; ++k)
      std::copy(sources[s].begin(), sources[s].end(), ids.begin() + (s * copies + k) * S);
  ensure(src_ids, rows, "src_ids", 4);
  ctx.upload(src_ids, ids.data(), ids.size() * 4);
  ensure(src_mask, rows, "src_mask");
  if (m.dtype == DType::F16) {
    std::vector<uint16_t> mask(rows);
    for (uint32_t i = 0; i < rows; ++i) mask[i] = ids[i] == c.pad_id ? neg_inf_half() : 0;
    ctx.upload(src_mask, mask.data(), rows * 2);
  } else {
    std::vector<float> mask(rows);
    for (uint32_t i = 0; i < rows; ++i) mask[i] = ids[i] == c.pad_id ? -INFINITY : 0.0f;
    ctx.upload(src_mask, mask.data(), rows * 4);
  }

  const uint32_t rows_max = std::max(rows, batch * capacity);
  ensure(x, uint64_t(rows_max) * D, "x");
  ensure(y, uint64_t(rows_max) * D, "y");
  ensure(attn, uint64_t(rows_max) * D, "attn");
  ensure(queries, uint64_t(rows_max) * D, "queries");
  ensure(hidden, uint64_t(rows_max) * c.dim_feedforward, "ffn_hidden");
  ensure(qkv, uint64_t(rows) * 3 * D, "qkv");
  ensure(memory, uint64_t(rows) * D, "memory");
  cross_kv.resize(m.decoder.size());
  self_cache.resize(m.decoder.size());
  spare_cache.resize(m.decoder.size());
  for (size_t l = 0; l < m.decoder.size(); ++l) {
    ensure(cross_kv[l], uint64_t(rows) * 2 * D, "cross_kv");
    ensure(self_cache[l], uint64_t(batch) * capacity * 3 * D, "self_cache");
  }

  CommandList cl = begin();
  const float scale = c.scale_embedding ? std::sqrt(float(D)) : 1.0f;
  ops.embedding(cl, {.rows = rows, .vocab = c.src_vocab_size, .dim = D, .scale = scale, .seq_len = S,
                     .positions = c.max_position},
                src_ids.view(), m.src_embed.view(), m.positions.view(), x.view());
  const model::EncoderShape shape{.batch = batch, .seq_len = S, .d_model = D, .heads = c.nhead,
                                  .activation = c.activation, .norm_first = c.norm_first, .eps = c.layer_norm_eps};
  const model::EncoderBuffers buffers{x, y, qkv, attn, hidden};
  for (const auto& layer : m.encoder) model::record_encoder_layer(ops, cl, layer, shape, buffers, src_mask.view());
  norm(cl, m.encoder_norm, x.view(), rows, memory.view());
  // Cross-attention keys and values, once per source for every decoding step.
  for (size_t l = 0; l < m.decoder.size(); ++l) linear(cl, m.decoder[l].cross_kv, memory.view(), rows, cross_kv[l].view());
  finish(cl, encoder_report);
}

void Session::Impl::decoder_layer(CommandList& cl, const DecoderLayer& l, size_t index, uint32_t t0, uint32_t n,
                                  bool stepped) {
  const ModelConfig& c = m.config;
  const uint32_t D = c.d_model, rows = batch * n, H = c.nhead, d = c.head_dim();
  const Buffer& cache = self_cache[index];
  const uint64_t cache_stride = uint64_t(capacity) * 3 * D;
  // Self-attention: this chunk's q, k, v go straight into the cache rows [t0, t0 + n);
  // stepped, t0 is the GPU's step counter instead (one row further per step).
  const std::optional<BufferView> step = stepped ? std::optional(step_counter.view()) : std::nullopt;
  const uint32_t max_step = stepped ? capacity - 1 : 0;
  auto self_attention = [&](const BufferView& in) {
    Gemm g{.M = n, .N = 3 * D, .K = D, .trans_b = true, .batch = batch};
    g.stride_a = {uint64_t(n) * D, 0};
    g.stride_c = {cache_stride, 0};
    if (stepped) g.step_c = 3 * D, g.max_step = max_step;
    ops.gemm(cl, g, in, l.self_qkv.weight.view(), at(cache, uint64_t(t0) * 3 * D), l.self_qkv.bias.view(),
             std::nullopt, step);
    Attention a{.batch = batch, .heads = H, .head_dim = d, .q_len = n, .kv_len = t0 + n, .causal = true,
                .causal_offset = t0, .q_batch_stride = cache_stride, .q_row_stride = 3 * D,
                .kv_batch_stride = cache_stride, .kv_row_stride = 3 * D};
    if (stepped) a.step_q = 3 * D, a.kv_grows = true, a.max_step = max_step;
    ops.attention(cl, a, at(cache, uint64_t(t0) * 3 * D), at(cache, D), at(cache, 2 * D), attn.view(), std::nullopt,
                  step);
  };
  auto cross_attention = [&](const BufferView& in) {
    linear(cl, l.cross_q, in, rows, queries.view());
    Attention a{.batch = batch, .heads = H, .head_dim = d, .q_len = n, .kv_len = src_len,
                .kv_batch_stride = uint64_t(src_len) * 2 * D, .kv_row_stride = 2 * D};
    ops.attention(cl, a, queries.view(), at(cross_kv[index], 0), at(cross_kv[index], D), attn.view(), src_mask.view());
  };
  if (!c.norm_first) {
    self_attention(x.view());
    linear(cl, l.self_out, attn.view(), rows, y.view(), Activation::None, x.view());
    norm(cl, l.norm1, y.view(), rows, x.view());
    cross_attention(x.view());
    linear(cl, l.cross_out, attn.view(), rows, y.view(), Activation::None, x.view());
    norm(cl, l.norm2, y.view(), rows, x.view());
    linear(cl, l.linear1, x.view(), rows, hidden.view(), c.activation);
    linear(cl, l.linear2, hidden.view(), rows, y.view(), Activation::None, x.view());
    norm(cl, l.norm3, y.view(), rows, x.view());
  } else {
    norm(cl, l.norm1, x.view(), rows, y.view());
    self_attention(y.view());
    linear(cl, l.self_out, attn.view(), rows, x.view(), Activation::None, x.view());
    norm(cl, l.norm2, x.view(), rows, y.view());
    cross_attention(y.view());
    linear(cl, l.cross_out, attn.view(), rows, x.view(), Activation::None, x.view());
    norm(cl, l.norm3, x.view(), rows, y.view());
    linear(cl, l.linear1, y.view(), rows, hidden.view(), c.activation);
    linear(cl, l.linear2, hidden.view(), rows, x.view(), Activation::None, x.view());
  }
}

void Session::Impl::record_decoder(CommandList& cl, uint32_t t0, uint32_t n, bool all_rows, bool stepped) {
  const ModelConfig& c = m.config;
  const uint32_t D = c.d_model, rows = batch * n, V = c.tgt_vocab_size;
  const float scale = c.scale_embedding ? std::sqrt(float(D)) : 1.0f;
  ops.embedding(cl, {.rows = rows, .vocab = V, .dim = D, .scale = scale, .seq_len = n, .position_offset = t0,
                     .positions = c.max_position, .position_per_step = stepped, .max_step = stepped ? capacity - 1 : 0},
                tgt_ids.view(), m.tgt_embed.view(), m.positions.view(), x.view(),
                stepped ? std::optional(step_counter.view()) : std::nullopt);
  for (size_t l = 0; l < m.decoder.size(); ++l) decoder_layer(cl, m.decoder[l], l, t0, n, stepped);
  norm(cl, m.decoder_norm, x.view(), rows, y.view());
  if (all_rows) {
    linear(cl, m.generator, y.view(), rows, logits.view());
  } else {  // only each sequence's last token predicts the next one
    Gemm g{.M = 1, .N = V, .K = D, .trans_b = true, .batch = batch};
    g.stride_a = {uint64_t(n) * D, 0};
    g.stride_c = {V, 0};
    ops.gemm(cl, g, at(y, uint64_t(n - 1) * D), m.generator.weight.view(), logits.view(), m.generator.bias.view());
  }
}

void Session::Impl::check_ids(const std::vector<uint32_t>& ids) const {
  for (uint32_t id : ids)
    if (id >= m.config.tgt_vocab_size)
      throw Error("target token id " + std::to_string(id) + " is outside the target vocabulary of " +
                  std::to_string(m.config.tgt_vocab_size));
}

std::vector<float> Session::Impl::decode(uint32_t t0, uint32_t n, const std::vector<uint32_t>& ids) {
  const uint32_t rows = batch * n, V = m.config.tgt_vocab_size;
  if (ids.size() != rows) throw Error("decode: expected " + std::to_string(rows) + " target ids");
  if (t0 + n > capacity)
    throw Error("target position " + std::to_string(t0 + n) + " is past the decoding capacity " + std::to_string(capacity));
  check_ids(ids);
  ensure(tgt_ids, rows, "tgt_ids", 4);
  ctx.upload(tgt_ids, ids.data(), rows * 4);
  ensure(logits, uint64_t(rows) * V, "logits");
  CommandList cl = begin();
  record_decoder(cl, t0, n, true, false);
  finish(cl, decoder_report);
  return model::download_floats(ctx, logits, uint64_t(rows) * V, m.dtype);
}

std::vector<uint32_t> Session::Impl::step(uint32_t t, const std::vector<uint32_t>& ids, std::vector<float>* logits_out) {
  const uint32_t V = m.config.tgt_vocab_size;
  if (ids.size() != batch) throw Error("step: expected one id per sequence");
  if (t >= capacity) throw Error("step: position " + std::to_string(t) + " is past the decoding capacity");
  check_ids(ids);
  if (!step_list) {
    ensure(step_counter, 1, "step_counter", 4);
    ensure(tgt_ids, batch, "tgt_ids", 4);
    ensure(logits, uint64_t(batch) * V, "logits");
    ensure(next_ids, batch, "next_ids", 4);
    step_list.emplace(begin());
    record_decoder(*step_list, 0, 1, false, true);
    ops.argmax(*step_list, logits.view(), next_ids.view(), batch, V);
  }
  ctx.upload(step_counter, &t, 4);
  ctx.upload(tgt_ids, ids.data(), batch * 4);
  finish(*step_list, decoder_report);
  if (logits_out) *logits_out = model::download_floats(ctx, logits, uint64_t(batch) * V, m.dtype);
  std::vector<uint32_t> next(batch);
  ctx.download(next_ids, next.data(), batch * 4);
  return next;
}

void Session::Impl::reorder(const std::vector<uint32_t>& parent, uint32_t t_filled) {
  const uint64_t row_bytes = uint64_t(capacity) * 3 * m.config.d_model * dtype_bytes(m.dtype);
  const uint64_t used = uint64_t(t_filled) * 3 * m.config.d_model * dtype_bytes(m.dtype);
  if (!used) return;
  // Gather into the spare cache, then copy back: the caches keep their buffers, which
  // the recorded decode step refers to.
  CommandList cl = ctx.command_list();
  for (size_t l = 0; l < self_cache.size(); ++l) {
    ensure(spare_cache[l], uint64_t(batch) * capacity * 3 * m.config.d_model, "self_cache");
    for (uint32_t k = 0; k < parent.size(); ++k)
      cl.copy(self_cache[l].view(parent[k] * row_bytes, used), spare_cache[l].view(k * row_bytes, used));
    for (uint32_t k = 0; k < parent.size(); ++k)
      cl.copy(spare_cache[l].view(k * row_bytes, used), self_cache[l].view(k * row_bytes, used));
  }
  cl.submit();
}

}  // namespace vkf
