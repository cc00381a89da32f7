#include "encoder_graph.hpp"

#include <chrono>
#include <cmath>

namespace vkf::model {

namespace {
// GPU time of a profiled submit: its first dispatch's start to its last's end (barriers
// and gaps between dispatches included), in ms; 0 without timestamps.
double gpu_span_ms(const std::vector<DispatchTiming>& t, const Capabilities& caps) {
  if (t.empty() || !caps.timestamp_valid_bits) return 0;
  const uint64_t mask = caps.timestamp_valid_bits >= 64 ? ~0ull : (1ull << caps.timestamp_valid_bits) - 1;
  return double((t.back().end_tick - t.front().start_tick) & mask) * caps.timestamp_period_ns / 1e6;
}
}  // namespace

EncoderStack encoder_stack(const Model::Impl& m) {
  const ModelConfig& c = m.config;
  return {.settings = {.d_model = c.d_model, .heads = c.nhead, .head_dim = c.head_dim(),
                       .dim_feedforward = c.dim_feedforward, .activation = c.activation, .norm_first = c.norm_first,
                       .eps = c.layer_norm_eps, .norm_kind = c.norm_kind},
          .layers = &m.encoder,
          .input_norm = c.embedding_norm ? &m.encoder_embed_norm : nullptr,
          .final_norm = c.final_norms ? &m.encoder_norm : nullptr};
}

EncoderGraph::EncoderGraph(Context& ctx, Ops& ops, EncoderStack stack, Recorder recorder)
    : ctx_(ctx), ops_(ops), stack_(stack), recorder_(std::move(recorder)) {}

uint32_t EncoderGraph::row_stats_parts(uint32_t rows) const {
  if (!ops_.fold_norms_in_encoder()) return 0;
  return encoder_row_stats_parts(ops_, rows, stack_.settings.d_model, stack_.settings.dim_feedforward);
}

BufferView EncoderGraph::run(const EncoderInput& in, const EncoderBuffers& b, const BufferView& out,
                             const std::function<void(CommandList&, const BufferView&)>& then) {
  const auto started = std::chrono::steady_clock::now();
  const EncoderSettings& s = stack_.settings;
  const std::vector<EncoderLayer>& layers = *stack_.layers;
  const uint32_t D = s.d_model, rows = in.batch * in.seq_len;
  if (in.tokens.has_value() == in.rows.has_value()) throw Error("encoder: one input stage, tokens or rows");

  // A game sharing the queue must not stall on one long submit: with a GPU-time budget
  // the stack goes in pieces of whole layers, each sized from the last run's time.
  const uint32_t units = uint32_t(layers.size()) + 1;  // the layers, then the final norm with `then`
  const uint32_t per_submit = units_per_submit(rows, units);
  double submitted_ms = 0;
  report.clear();
  submits = 0;
  gpu_ms = 0;
  CommandList cl = ctx_.command_list({.profile = profile});
  auto submit = [&] {
    const auto t = std::chrono::steady_clock::now();
    cl.submit();
    submitted_ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
    ++submits;
    if (profile) {
      report += cl.profile_report();
      gpu_ms += gpu_span_ms(cl.timings(), ctx_.capabilities());
    }
  };

  // Folded (each norm folded into the GEMMs that read it), a post-norm stack's input norm
  // is pending into the first layer like any layer's last norm; otherwise it runs on its
  // own, the input stage writing y first.
  const bool fused = ops_.fold_norms_in_encoder();
  const bool input_norm_alone = stack_.input_norm && !(fused && !s.norm_first);
  const Buffer& embedded = input_norm_alone ? b.y : b.x;
  if (in.tokens) {
    const TokenInput& t = *in.tokens;
    ops_.embedding(cl, {.rows = rows, .vocab = t.vocab, .dim = D, .scale = t.scale, .seq_len = in.seq_len,
                        .positions = t.max_positions, .table_blocks = t.table_blocks, .types = t.types},
                   t.ids, t.table, t.positions, embedded.view(), std::nullopt, std::nullopt, t.type_ids,
                   t.type_table);  // x [rows, D]
  } else {
    // patches[b, p, :] = series[b item_stride + p stride, + width): A rows overlap where
    // stride < width; the positions broadcast over the batch in the epilogue.
    const RowInput& r = *in.rows;
    Gemm g{.M = in.seq_len, .N = D, .K = r.width, .trans_b = true, .lda = r.stride, .batch = in.batch};
    g.stride_a = {r.item_stride, 0};
    g.stride_c = {uint64_t(in.seq_len) * D, 0};
    g.stride_r = {0, 0};
    ops_.gemm(cl, g,
              {.a = r.series, .b = r.projection->weight.view(), .c = embedded.view(), .bias = r.projection->bias.view(),
               .residual = r.positions});  // x [rows, D]
  }
  if (input_norm_alone) recorder_(cl, rows).norm(*stack_.input_norm, b.y.view(), b.x.view());  // x [rows, D]

  const LayerPlan plan{.fold_norms = fused, .stats = {&b.stats[0], &b.stats[1]}};
  Stream x{&b.x, stack_.input_norm && !input_norm_alone ? stack_.input_norm : nullptr};
  const EncoderShape shape{.batch = in.batch, .seq_len = in.seq_len, .heads = s.heads, .head_dim = s.head_dim};
  const std::optional<BufferView> mask = in.tokens ? in.tokens->mask : std::nullopt;
  uint64_t layer_dispatches = 0;  // counted in the one place every layer is recorded
  for (size_t l = 0; l < layers.size(); ++l) {
    LayerRecorder r = recorder_(cl, rows);
    r.plan = plan;
    const uint32_t before = cl.stats().dispatches;
    x = record_encoder_layer(r, layers[l], shape, b, mask, x);
    layer_dispatches += cl.stats().dispatches - before;
    if (per_submit && (l + 1) % per_submit == 0) {  // this piece is full: the next one starts
      submit();
      cl = ctx_.command_list({.profile = profile});
    }
  }
  if (!layers.empty()) dispatches_per_layer = double(layer_dispatches) / layers.size();
  // The last hidden state: the final norm of the last layer's output, post-norm its
  // pending norm too, in one dispatch.
  BufferView hidden = x.x->view();  // [rows, D]
  const LayerNorm n{.rows = rows, .cols = D, .eps = s.eps, .kind = s.norm_kind};
  const auto pending = x.pending ? std::optional(NormWeights{x.pending->gamma.view(), x.pending->beta.view()}) : std::nullopt;
  if (stack_.final_norm) {
    ops_.layer_norm(cl, n, x.x->view(), stack_.final_norm->gamma.view(), stack_.final_norm->beta.view(), out,
                    std::nullopt, std::nullopt, pending);  // hidden = LN(LN_pending(x))
    hidden = out;
  } else if (pending) {
    ops_.layer_norm(cl, n, x.x->view(), pending->gamma, pending->beta, out);  // hidden = LN_pending(x)
    hidden = out;
  }
  if (then) then(cl, hidden);
  submit();
  ms_per_unit_row_ = submitted_ms / (double(units) * rows);
  ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
  return hidden;
}

std::vector<float> image_patches(const std::vector<float>& images, uint32_t batch, uint32_t channels, uint32_t height,
                                 uint32_t width, uint32_t ph, uint32_t pw) {
  if (!batch || !channels || !ph || !pw || height < ph || width < pw || height % ph || width % pw)
    throw Error("image patches: " + std::to_string(height) + " x " + std::to_string(width) + " images do not divide into " +
                std::to_string(ph) + " x " + std::to_string(pw) + " patches");
  const uint64_t pixels = uint64_t(height) * width, expected = uint64_t(batch) * channels * pixels;
  if (images.size() != expected)
    throw Error("image patches: " + std::to_string(images.size()) + " values are not " + std::to_string(batch) + " x " +
                std::to_string(channels) + " x " + std::to_string(height) + " x " + std::to_string(width));
  const uint32_t rows = height / ph, cols = width / pw, per_patch = channels * ph * pw;
  std::vector<float> out(expected);
  for (uint32_t b = 0; b < batch; ++b)
    for (uint32_t py = 0; py < rows; ++py)
      for (uint32_t px = 0; px < cols; ++px) {
        float* patch = out.data() + ((uint64_t(b) * rows + py) * cols + px) * per_patch;
        for (uint32_t c = 0; c < channels; ++c)
          for (uint32_t y = 0; y < ph; ++y)
            for (uint32_t x = 0; x < pw; ++x)
              *patch++ = images[(uint64_t(b) * channels + c) * pixels + uint64_t(py * ph + y) * width + px * pw + x];
      }
  return out;
}

uint32_t EncoderGraph::units_per_submit(uint32_t rows, uint32_t units) const {
  // Not measured yet (the first run; Session::warmup does one): all in one submit.
  if (submit_budget_ms <= 0 || ms_per_unit_row_ <= 0) return 0;
  // A CPU driver (lavapipe) runs submits on the CPU's own threads, where no renderer
  // waits behind them: pieces would only add host round trips (4% of decoding there).
  if (ctx_.capabilities().type == DeviceType::Cpu) return 0;
  // Time grows at most linearly with the rows (less where dispatch overhead dominates),
  // and the measurement includes the host's submit and wait: both err on the safe side.
  const double unit_ms = ms_per_unit_row_ * rows;
  const uint32_t fit = uint32_t(std::max(1.0, std::floor(submit_budget_ms / unit_ms)));
  return fit >= units ? 0 : fit;
}

}  // namespace vkf::model
