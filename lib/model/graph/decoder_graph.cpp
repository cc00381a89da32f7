// The forward pass of every model with a decoder, as nn.Transformer (and Hugging Face's
// Marian, BART, GPT-2, Llama) compute it, top to bottom:
//
//   memory = encoder(src)                             encoder_graph.hpp    [B*S, D]
//   cross  = memory W_kv^T + b for each decoder layer (once per source)    [B*S, 2W]
//   y      = tgt_embed[tgt] * sqrt(D)? + PE           decoder input        [B*n, D]
//   y      = LN_embed(y)                              BART only            [B*n, D]
//   y      = decoder_layer(y, cache, cross) for each layer                 [B*n, D]
//   logits = LN?(y) W_gen^T + b                                            [B*n, V]
//
// B sequences (beams count as sequences), S padded source tokens, n target tokens per
// pass, D = d_model, W = the attention's width (heads x head_dim), V = the target
// vocabulary. A decoder-only model has no encoder and no cross-attention; its decoder
// reads the prompt (rotary positions rotate queries and keys instead of a PE). Residual
// adds ride in GEMM epilogues.
#include "decoder_graph.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "buffers.hpp"
#include "vkformer/half.hpp"
#include "vkformer/tensor_io.hpp"

namespace vkf::model {

namespace {
constexpr uint16_t kHalfNegativeInfinity = 0xfc00;  // IEEE fp16 -inf: sign 1, exponent all ones, mantissa 0
}  // namespace

DecoderGraph::DecoderGraph(const Model::Impl& m) : m_(m), ctx_(m.ctx), ops_(m.ctx, m.dtype) {
  if (m.config.kind == ModelKind::DecoderOnly) return;
  encoder_.emplace(ctx_, ops_, encoder_stack(m), [this](CommandList& cl, uint32_t rows) { return recorder(cl, rows); });
}

LayerRecorder DecoderGraph::recorder(CommandList& cl, uint32_t rows) {
  const ModelConfig& c = m_.config;
  if (!norm_tickets_) {  // zero: each product that takes a ticket leaves it so
    norm_tickets_ = ctx_.buffer(4, "norm_tickets");
    const uint32_t zero = 0;
    ctx_.upload(norm_tickets_, &zero, 4);
  }
  if (m_.dequantized_values && !dequantized_ && ops_.blocks_need_scratch())
    dequantized_ = ctx_.buffer(m_.dequantized_values * dtype_bytes(m_.dtype), "dequantized weight");
  return {.ops = ops_, .cl = cl, .rows = rows, .d_model = c.d_model, .norm_first = c.norm_first,
          .eps = c.layer_norm_eps, .activation = c.activation, .norm_kind = c.norm_kind, .gated_ffn = c.gated_ffn,
          .norm_tickets = norm_tickets_.view(),
          .dequantized = dequantized_ ? std::optional(dequantized_.view()) : std::nullopt};
}

CommandList DecoderGraph::begin() { return ctx_.command_list({.profile = profile}); }

void DecoderGraph::finish(CommandList& cl, std::string& report) {
  cl.submit();
  if (profile) report = cl.profile_report();
}

void DecoderGraph::encode(const std::vector<std::vector<uint32_t>>& sources, uint32_t copies,
                          uint32_t target_capacity) {
  const auto started = std::chrono::steady_clock::now();
  const ModelConfig& c = m_.config;
  if (!encoder_) throw Error("encode: the model has no encoder (a decoder-only model reads prompts)");
  if (sources.empty()) fail_invalid_input("no source sequences given");
  src_len_ = 0;
  for (size_t s = 0; s < sources.size(); ++s) {
    if (sources[s].empty()) fail_invalid_input("source " + std::to_string(s) + " is empty");
    if (sources[s].size() > c.max_position)
      fail_invalid_input("source " + std::to_string(s) + " has " + std::to_string(sources[s].size()) +
                  " tokens, more than the model's max_position " + std::to_string(c.max_position));
    for (uint32_t id : sources[s])
      if (id >= c.src_vocab_size)
        fail_invalid_input("source " + std::to_string(s) + " has token id " + std::to_string(id) +
                    ", outside the source vocabulary of " + std::to_string(c.src_vocab_size));
    src_len_ = std::max<uint32_t>(src_len_, uint32_t(sources[s].size()));
  }
  if (target_capacity > c.max_position)
    fail_invalid_input("decoding " + std::to_string(target_capacity) + " target positions exceeds the model's max_position " +
                std::to_string(c.max_position));
  // Sizes in 64 bits, checked before anything is allocated: a batch times a beam times a
  // length must not wrap a 32-bit row count, nor ask for more than one binding can hold.
  const uint64_t batch = uint64_t(sources.size()) * copies;
  const uint64_t widest = std::max<uint64_t>({3ull * std::max(c.d_model, c.attention_width()), c.dim_feedforward, c.tgt_vocab_size});
  const uint64_t largest = batch * std::max<uint64_t>(src_len_, target_capacity) * widest * dtype_bytes(m_.dtype);
  const uint64_t limit = ctx_.capabilities().max_storage_buffer_range;
  if (batch > (1u << 20) || largest > limit)
    throw Error(std::to_string(sources.size()) + " source(s) x " + std::to_string(copies) + " cop" +
                (copies == 1 ? "y" : "ies (beam)") + " x " + std::to_string(std::max<uint32_t>(src_len_, target_capacity)) +
                " positions need " + std::to_string(largest >> 20) + " MiB in one buffer, more than device '" +
                ctx_.capabilities().name + "' binds (" + std::to_string(limit >> 20) +
                " MiB): use fewer or shorter sources, a smaller beam or fewer new tokens");
  step_list_.reset();  // they refer to buffers that may be reallocated below
  steps_list_.reset();
  batch_ = uint32_t(batch);
  const uint32_t D = c.d_model, S = src_len_, rows = batch_ * S;
  const uint32_t e = dtype_bytes(m_.dtype);

  // Ids padded with pad_id; the mask drops every pad_id key, as src == pad_id does in PyTorch.
  std::vector<uint32_t> ids(rows, c.pad_id);
  for (size_t s = 0; s < sources.size(); ++s)
    for (uint32_t k = 0; k < copies; ++k)
      std::copy(sources[s].begin(), sources[s].end(), ids.begin() + (s * copies + k) * S);
  ensure(ctx_, src_ids_, rows, 4, "src_ids", BufferUse::HostAccess);
  ctx_.upload(src_ids_, ids.data(), ids.size() * 4);
  ensure(ctx_, src_mask_, rows, e, "src_mask", BufferUse::HostAccess);
  if (m_.dtype == DType::F16) {
    std::vector<uint16_t> mask(rows);
    for (uint32_t i = 0; i < rows; ++i) mask[i] = ids[i] == c.pad_id ? kHalfNegativeInfinity : 0;
    ctx_.upload(src_mask_, mask.data(), rows * 2);
  } else {
    std::vector<float> mask(rows);
    for (uint32_t i = 0; i < rows; ++i) mask[i] = ids[i] == c.pad_id ? -INFINITY : 0.0f;
    ctx_.upload(src_mask_, mask.data(), rows * 4);
  }

  reserve(S, target_capacity);

  // The encoder stack over the sources, then each decoder layer's cross-attention keys
  // and values from its last hidden state (the memory), once per source for every step.
  const bool stats = encoder_->row_stats_parts(rows) != 0;
  const EncoderBuffers buffers{x_, y_, qkv_, attn_, hidden_, {stats ? row_stats_[0] : Buffer{}, stats ? row_stats_[1] : Buffer{}}};
  const EncoderInput input{
      .batch = batch_, .seq_len = S,
      .tokens = TokenInput{.ids = src_ids_.view(), .table = m_.src_embed.view(), .table_blocks = m_.src_embed_blocks,
                           .vocab = c.src_vocab_size, .scale = c.scale_embedding ? std::sqrt(float(D)) : 1.0f,
                           .positions = m_.positions.view(), .max_positions = c.max_position, .mask = src_mask_.view()}};
  encoder_->profile = profile;
  encoder_->submit_budget_ms = submit_budget_ms;
  encoder_->run(input, buffers, memory_.view(), [&](CommandList& cl, const BufferView& memory) {
    const LayerRecorder r = recorder(cl, rows);
    for (size_t l = 0; l < m_.decoder.size(); ++l)
      r.linear(m_.decoder[l].cross_kv, memory, cache_.cross(l).view());  // cross [B*S, 2W]
  });
  encoder_report = encoder_->report;
  encode_submits = encoder_->submits;
  encode_gpu_ms = encoder_->gpu_ms;
  if (!m_.encoder.empty()) encoder_dispatches_per_layer_ = encoder_->dispatches_per_layer;
  encode_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
}

void DecoderGraph::reserve(uint32_t S, uint32_t target_capacity) {
  const ModelConfig& c = m_.config;
  const uint32_t D = c.d_model, W = c.attention_width(), rows = batch_ * S, e = dtype_bytes(m_.dtype);
  // Activations, shared by the encoder and the decoder's passes (at most capacity tokens).
  const uint64_t rows_max = std::max(rows, batch_ * target_capacity);
  ensure(ctx_, x_, rows_max * D, e, "x");                         // [rows, D]
  ensure(ctx_, y_, rows_max * D, e, "y");                         // [rows, D]
  ensure(ctx_, attn_, rows_max * W, e, "attn");                   // [rows, W]
  ensure(ctx_, queries_, rows_max * W, e, "queries");             // [rows, W]
  ensure(ctx_, hidden_, rows_max * c.dim_feedforward * (c.gated_ffn ? 3 : 1), e, "ffn_hidden");  // [rows, FFN] (gated: + [rows, 2 FFN])
  ensure(ctx_, qkv_, uint64_t(rows) * 3 * W, e, "qkv");           // [B*S, 3W]
  ensure(ctx_, memory_, uint64_t(rows) * D, e, "memory");         // [B*S, D]
  if (const uint32_t parts = rows ? encoder_row_stats_parts(ops_, rows, D, c.dim_feedforward) : 0)
    for (Buffer& b : row_stats_) ensure(ctx_, b, uint64_t(rows) * parts * 4, 4, "row_stats");  // [B*S, parts, 4] fp32
  cache_.reserve(ctx_, m_.dtype, uint32_t(m_.decoder.size()), batch_, target_capacity, S,
                 c.kv_head_count() * c.head_dim());
  // Decode steps' fused attention: the larger of its self- and cross-attention needs,
  // zeroed when new (its ticket counters must start at zero; each dispatch leaves them so).
  const auto attention_scratch = [&](uint32_t kv_len) {
    return ops_.decode_attention_scratch_bytes(
        {.batch = batch_, .heads = c.nhead, .head_dim = c.head_dim(), .q_len = 1, .kv_len = std::max(kv_len, 1u)}, D);
  };
  const uint64_t scratch_bytes = std::max(attention_scratch(target_capacity), attention_scratch(S));
  if (!attention_scratch_ || attention_scratch_.size() < scratch_bytes) {
    attention_scratch_ = ctx_.buffer(scratch_bytes, "attention_scratch");
    const std::vector<uint8_t> zeros(scratch_bytes, 0);
    ctx_.upload(attention_scratch_, zeros.data(), scratch_bytes);
  }
}

void DecoderGraph::begin_prompts(uint32_t batch, uint32_t target_capacity) {
  const ModelConfig& c = m_.config;
  if (c.kind != ModelKind::DecoderOnly) throw Error("begin_prompts: the model has an encoder");
  if (!batch || !target_capacity) fail_invalid_input("no sequences or no positions to decode");
  if (target_capacity > c.max_position)
    fail_invalid_input(std::to_string(target_capacity) + " positions exceed the model's " + std::to_string(c.max_position) +
                " (n_positions)");
  // The largest buffer one binding holds: a pass's widest activation over every
  // position ([rows, 3D] projections, [rows, FFN] or a gated [rows, 3 FFN]), or the
  // logits of each sequence's last position [B, V] (score()'s of every position: decode()).
  const uint64_t widest = std::max<uint64_t>(3ull * std::max(c.d_model, c.attention_width()), uint64_t(c.dim_feedforward) * (c.gated_ffn ? 3 : 1));
  const uint64_t largest = std::max(uint64_t(batch) * target_capacity * widest, uint64_t(batch) * c.tgt_vocab_size) *
                           dtype_bytes(m_.dtype);
  const uint64_t limit = ctx_.capabilities().max_storage_buffer_range;
  if (batch > (1u << 20) || largest > limit)
    throw Error(std::to_string(batch) + " sequence(s) x " + std::to_string(target_capacity) + " positions need " +
                std::to_string(largest >> 20) + " MiB in one buffer, more than device '" + ctx_.capabilities().name +
                "' binds (" + std::to_string(limit >> 20) + " MiB): use fewer or shorter prompts or fewer new tokens",
                ErrorKind::InvalidInput);
  step_list_.reset();  // they refer to buffers that may be reallocated below
  steps_list_.reset();
  prompt_report.clear();
  batch_ = batch;
  src_len_ = 0;
  left_pad_.clear();
  ensure(ctx_, src_mask_, 1, dtype_bytes(m_.dtype), "src_mask", BufferUse::HostAccess);  // bound, never read: there is no source
  reserve(0, target_capacity);
}

void DecoderGraph::set_left_padding(const std::vector<uint32_t>& pads, uint32_t prompt_len) {
  if (m_.config.kind != ModelKind::DecoderOnly) throw Error("left padding: the model has an encoder (its sources are padded on the right)");
  if (pads.size() != batch_) throw Error("left padding: one count per sequence of the batch");
  step_list_.reset();  // recorded without (or with other) masks
  steps_list_.reset();
  left_pad_.clear();
  prompt_mask_len_ = prompt_len;
  if (std::all_of(pads.begin(), pads.end(), [](uint32_t p) { return p == 0; })) return;
  const uint32_t capacity = cache_.capacity();
  for (uint32_t p : pads)
    if (p >= prompt_len + 1 || p >= capacity) throw Error("left padding: a sequence would be padding only");
  left_pad_ = pads;
  ensure(ctx_, pad_shift_, batch_, 4, "pad_shift", BufferUse::HostAccess);  // [B] uint32
  ctx_.upload(pad_shift_, pads.data(), uint64_t(batch_) * 4);
  // The most negative fp16 rather than -inf: exp(score - 65504) is 0 in fp32 for any score
  // a model produces, and the padding's own queries, which see nothing but padding, stay
  // finite (with -inf they would be NaN, and NaN keys and values poison even at weight 0).
  auto mask = [&](Buffer& b, uint32_t keys, const char* name) {
    if (!keys) return;
    std::vector<float> m(uint64_t(batch_) * keys, 0.0f);
    for (uint32_t s = 0; s < batch_; ++s)
      for (uint32_t j = 0; j < std::min(pads[s], keys); ++j) m[uint64_t(s) * keys + j] = -65504.0f;
    b = upload_floats(ctx_, m, m_.dtype, name);
  };
  mask(prompt_mask_, prompt_len, "prompt_mask");  // [B, prompt_len]
  mask(step_mask_, capacity, "step_mask");        // [B, capacity]
}

void DecoderGraph::record_decoder(CommandList& cl, const DecoderOptions& o) {
  const ModelConfig& c = m_.config;
  const uint32_t D = c.d_model, rows = batch_ * o.n, V = c.tgt_vocab_size;
  LayerRecorder r = recorder(cl, rows);
  const float scale = c.scale_embedding ? std::sqrt(float(D)) : 1.0f;
  // Folds take LayerNorms and RMSNorms; a pre-norm layer also grouped K/V heads, rotary
  // positions and a gated FFN (Llama's); post-norm ones (the encoder-decoders) have none.
  const bool plain = c.norm_first || (c.norm_kind == NormKind::LayerNorm && !c.gated_ffn && c.kv_head_count() == c.nhead &&
                                      c.positions != ModelConfig::Positions::Rotary);
  const bool fold = plain && o.step && rows <= Ops::kMaxFoldedNormRows && ops_.fold_norms_in_decode_steps();
  // A decoder-only model's prompt (pre-norm): the fused encoder's path, with a causal mask,
  // where both encoders and decode steps fold (VKF_FOLD_NORMS=1 by default): on CPU drivers
  // the unfolded 7 dispatches measured faster (docs/performance.md).
  const bool prompt_fused = plain && c.kind == ModelKind::DecoderOnly && c.norm_first && !o.step && ops_.fold_norms_in_decode_steps() &&
                            ops_.fold_norms_in_encoder();
  // Post-norm, a decode step folds the embedding's norm into the first layer's GEMMs like
  // any layer's last norm; otherwise it runs on its own, embedding into y first.
  const bool embed_norm_pending = fold && c.embedding_norm && !c.norm_first;
  const bool embed_norm_alone = c.embedding_norm && !embed_norm_pending;
  const Buffer& embedded = embed_norm_alone ? y_ : x_;
  const bool padded = !left_pad_.empty();  // a left-padded decoder-only batch
  if (padded && !o.step && o.t0 + o.n != prompt_mask_len_)
    throw Error("left padding: a pass over positions other than the padded prompt's");
  const bool rotary = c.positions == ModelConfig::Positions::Rotary;  // positions rotate q and k instead
  ops_.embedding(cl, {.rows = rows, .vocab = V, .dim = D, .scale = scale, .seq_len = o.n, .position_offset = o.t0,
                      .positions = c.max_position, .table_blocks = m_.tgt_embed_blocks},
                 tgt_ids_.view(), m_.tgt_embed.view(),
                 rotary ? std::nullopt : std::optional(m_.tgt_positions.view()), embedded.view(), o.step,
                 padded && !rotary ? std::optional(pad_shift_.view()) : std::nullopt);  // [B*n, D]
  if (embed_norm_alone) r.norm(m_.decoder_embed_norm, y_.view(), x_.view());  // x [B*n, D]
  const DecoderPass pass{.batch = batch_, .n = o.n, .heads = c.nhead, .head_dim = c.head_dim(), .t0 = o.t0, .step = o.step};
  DecoderBuffers buffers{x_, y_, queries_, attn_, hidden_, src_mask_.view(), attention_scratch_.view()};
  if (padded) buffers.self_mask = (o.step ? step_mask_ : prompt_mask_).view();
  if (rotary) {
    buffers.rope_table = m_.rope_table.view();
    buffers.rope_positions = c.max_position;
    if (padded) buffers.position_shift = pad_shift_.view();
  }
  // The pass's plan. A decode step on a GPU folds each LayerNorm into the GEMM that reads
  // it (post-norm, the last layer's norm and the final norm then run as one dispatch),
  // each attention followed by its output projection or fused with it. A decoder-only
  // prompt folds as the fused encoder does (5 dispatches a layer), the rows' statistics
  // handed between GEMMs where the device's GEMMs write them.
  using StepAttention = LayerPlan::StepAttention;
  r.plan.fold_norms = fold || prompt_fused;
  if (fold)
    r.plan.step_attention = ops_.project_in_decode_attention() ? StepAttention::DecodeProjected : StepAttention::Decode;
  if (prompt_fused)
    if (const uint32_t parts = encoder_row_stats_parts(ops_, rows, D, c.dim_feedforward)) {
      for (Buffer& b : row_stats_) ensure(ctx_, b, uint64_t(rows) * parts * 4, 4, "row_stats");  // [rows, parts, 4] fp32
      r.plan.stats[0] = &row_stats_[0], r.plan.stats[1] = &row_stats_[1];
    }
  const uint32_t before = cl.stats().dispatches;
  // The stream points at buffers' own members: the layers tell them apart by address.
  Stream s{&buffers.x, embed_norm_pending ? &m_.decoder_embed_norm : nullptr};
  for (size_t l = 0; l < m_.decoder.size(); ++l) s = record_decoder_layer(r, m_.decoder[l], l, pass, buffers, cache_, s);
  // A decoder-only prompt pass is counted as an encode is (what the model reads before decoding).
  if (!m_.decoder.empty())
    (c.kind == ModelKind::DecoderOnly && !o.step ? encoder_dispatches_per_layer_ : dispatches_per_layer_) =
        double(cl.stats().dispatches - before) / m_.decoder.size();
  // y [B*n, D]: the decoder's output after its final norm (post-norm, folded: with the
  // last layer's pending norm, in one dispatch).
  const Buffer* out = s.x == &buffers.x ? &buffers.y : &buffers.x;
  if (s.pending) {
    const NormWeights pending{s.pending->gamma.view(), s.pending->beta.view()};
    if (c.final_norms)
      ops_.layer_norm(cl, {.rows = rows, .cols = D, .eps = c.layer_norm_eps, .kind = c.norm_kind}, s.x->view(),
                      m_.decoder_norm.gamma.view(), m_.decoder_norm.beta.view(), out->view(), std::nullopt,
                      std::nullopt, pending);  // out = LN(LN_pending(h))
    else
      ops_.layer_norm(cl, {.rows = rows, .cols = D, .eps = c.layer_norm_eps, .kind = c.norm_kind}, s.x->view(), pending.gamma,
                      pending.beta, out->view());  // out = LN_pending(h)
  } else if (c.final_norms) {
    r.norm(m_.decoder_norm, s.x->view(), out->view());  // out = LN(x)
  } else {
    out = s.x;
  }
  const Buffer& y = *out;
  if (o.logits_of_every_token) {
    r.linear(m_.generator, y.view(), logits_.view());  // logits [B*n, V]
  } else {  // only each sequence's last token predicts the next one
    // One product of a row per sequence (rows n D apart): the weight read once for the
    // batch, unless the kernel that would read it in blocks takes fewer rows: then a
    // product per sequence, each reading the blocks.
    Gemm g{.M = batch_, .N = V, .K = D, .trans_b = true, .lda = o.n * D, .b_blocks = m_.generator.blocks};
    if (g.b_blocks && !ops_.gemm_reads_blocks(g)) {
      g.M = 1, g.lda = 0, g.batch = batch_;
      g.stride_a = {uint64_t(o.n) * D, 0};
      g.stride_c = {V, 0};
    }
    ops_.gemm(cl, g,
              {.a = r.at(y, uint64_t(o.n - 1) * D), .b = m_.generator.weight.view(), .c = logits_.view(),
               .bias = m_.generator.bias.view(), .scratch = r.dequantized});  // logits [B, V]
  }
}

void DecoderGraph::check_target_ids(const std::vector<uint32_t>& ids) const {
  for (uint32_t id : ids)
    if (id >= m_.config.tgt_vocab_size)
      fail_invalid_input("target token id " + std::to_string(id) + " is outside the target vocabulary of " +
                  std::to_string(m_.config.tgt_vocab_size));
}

void DecoderGraph::upload_tokens(uint32_t t0, uint32_t n, const std::vector<uint32_t>& ids) {
  const uint32_t rows = batch_ * n;
  if (ids.size() != rows) fail_invalid_input("decode: expected " + std::to_string(rows) + " target ids");
  if (t0 + n > cache_.capacity())
    fail_invalid_input("target position " + std::to_string(t0 + n) + " is past the decoding capacity " +
                std::to_string(cache_.capacity()));
  check_target_ids(ids);
  ensure(ctx_, tgt_ids_, rows, 4, "tgt_ids", BufferUse::HostAccess);
  ctx_.upload(tgt_ids_, ids.data(), rows * 4);
}

void DecoderGraph::prefill(uint32_t t0, uint32_t n, const std::vector<uint32_t>& ids) {
  upload_tokens(t0, n, ids);
  ensure(ctx_, logits_, uint64_t(batch_) * m_.config.tgt_vocab_size, dtype_bytes(m_.dtype), "logits");
  CommandList cl = begin();
  record_decoder(cl, {.t0 = t0, .n = n});  // the cache filled; logits of each sequence's last token only
  finish(cl, prompt_report);
}

std::vector<float> DecoderGraph::decode(uint32_t t0, uint32_t n, const std::vector<uint32_t>& ids) {
  const uint32_t rows = batch_ * n, V = m_.config.tgt_vocab_size;
  const uint64_t logits_bytes = uint64_t(rows) * V * dtype_bytes(m_.dtype), limit = ctx_.capabilities().max_storage_buffer_range;
  if (logits_bytes > limit)
    throw Error("the logits of " + std::to_string(rows) + " positions x " + std::to_string(V) + " tokens need " +
                std::to_string(logits_bytes >> 20) + " MiB in one buffer, more than device '" + ctx_.capabilities().name +
                "' binds (" + std::to_string(limit >> 20) + " MiB): score fewer positions at once",
                ErrorKind::InvalidInput);
  upload_tokens(t0, n, ids);
  ensure(ctx_, logits_, uint64_t(rows) * V, dtype_bytes(m_.dtype), "logits");
  CommandList cl = begin();
  record_decoder(cl, {.t0 = t0, .n = n, .logits_of_every_token = true});
  finish(cl, decoder_report);
  return download_floats(ctx_, logits_, uint64_t(rows) * V, m_.dtype);
}

}  // namespace vkf::model
