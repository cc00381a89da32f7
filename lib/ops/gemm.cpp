#include <algorithm>
#include <map>
#include <mutex>
#include <cstdlib>
#include <string>

#include "gemm_flags.h"  // shaders/: flag bits shared with the GLSL kernels
#include "gemm_tiles.hpp"
#include "gemm_operands.hpp"
#include "vkformer/gemm_tuning.hpp"
#include "vkformer/ops.hpp"

namespace vkf {

namespace {

struct GemmPush {
  uint32_t M, N, K, lda, ldb, ldc, ldr, inner;
  uint32_t stride_a[2], stride_b[2], stride_c[2], stride_r[2];
  float alpha;
  uint32_t flags;
  uint32_t base_a, base_b, base_c, base_r;
  uint32_t split_n, ldc2, stride_c2, base_c2;
  float norm_eps;
  uint32_t stats_parts;
  uint32_t address_a[2], address_b[2];  // gemm_small_m.comp's ADDRESS_AB: the placed views' addresses (low, high)
};
static_assert(sizeof(GemmPush) == 128, "matches Push in shaders/gemm_common.glsl");

constexpr uint32_t kSmallM = GEMM_SMALL_M_MAX_M;  // MAX_M of gemm_small_m.comp
static_assert(Ops::kMaxFoldedNormRows == kSmallM, "the decode-step kernel's rows");
static_assert(uint32_t(Activation::Relu) == GEMM_ACT_RELU && uint32_t(Activation::Gelu) == GEMM_ACT_GELU &&
              uint32_t(Activation::GeluTanh) == GEMM_ACT_GELU_TANH &&
                  uint32_t(Activation::Silu) == GEMM_ACT_SILU,
              "activation codes match gemm_flags.h");

uint32_t narrow(uint64_t v, const char* what) {
  if (v > 0xffffffffull) throw Error(std::string("gemm: ") + what + " does not fit 32 bits");
  return uint32_t(v);
}

}  // namespace

bool Ops::fold_norms_in_decode_steps() const {
  if (const auto fold = ctx_.policy().fold_norms) return *fold;
  return ctx_.capabilities().type != DeviceType::Cpu;  // the portable profile counts as a GPU
}

// The same override as decode steps. CPU drivers fold where the direct GEMM passes row
// statistics from the GEMM that writes a norm's input to those that read it (RowStats):
// lavapipe, Transformer-base encode of 24 tokens, 5 dispatches per layer at ~7% more
// time than 7 unfolded (each workgroup re-reading its rows for their statistics cost ~45%).
bool Ops::fold_norms_in_encoder() const {
  if (const auto fold = ctx_.policy().fold_norms) return *fold;
  if (ctx_.capabilities().type != DeviceType::Cpu) return false;  // the folded products are slow there (ops.hpp)
  return gemm_row_stats_parts({.M = 2 * kSmallM + 1, .N = 64, .K = 64, .trans_b = true}) != 0;
}


// The tiles gemm() runs: the caller's (the tuner's candidates), else the device's tuning
// file's for the row class, else what a tune on this very card chose (tuned_device_tiles),
// else the default table's.
GemmTiles Ops::gemm_tiles(const Gemm& g) const {
  const Capabilities& caps = ctx_.capabilities();
  if (g.tiles) {
    if (const std::string problem = gemm_tiles_problem(caps, *g.tiles, dtype_); !problem.empty())
      throw Error("gemm: tiles " + g.tiles->name() + " cannot run on device '" + caps.name + "': " + problem);
    return *g.tiles;
  }
  if (const auto t = ctx_.policy().gemm_tiles) {
    if (const std::string problem = gemm_tiles_problem(caps, *t, dtype_); !problem.empty())
      throw Error("gemm: the policy's tiles " + t->name() + " (VKF_GEMM_TILES) cannot run on device '" + caps.name +
                  "': " + problem);
    return *t;
  }
  if (const auto tuned = ops::cached_gemm_tuning(ctx_, dtype_))
    if (const auto& t = tuned->tiles[gemm_row_class(g.M)]) return *t;
  if (const auto t = tuned_device_tiles(caps, dtype_, g.M)) return *t;
  return default_gemm_tiles(g);
}

GemmTiles Ops::default_gemm_tiles(const Gemm& g) const {
  const uint64_t large_tiles = uint64_t((g.M + 127) / 128) * ((g.N + 127) / 128) * g.batch * g.heads;
  return ops::choose_gemm_tiles(ctx_.capabilities(), dtype_, g.M, g.N, large_tiles);
}

bool Ops::fits_one_binding(uint64_t bytes) const { return bytes <= ctx_.capabilities().max_storage_buffer_range; }

std::string Ops::gemm_variant(const Gemm& g0) const {
  if (g0.M <= kSmallM) {
    Gemm g = g0;
    if (!g.lda) g.lda = g.trans_a ? g.M : g.K;
    if (!g.ldb) g.ldb = g.trans_b ? g.K : g.N;
    // Both operands assumed to start aligned (the views are not known here).
    const ops::SmallMOperand a{.bytes = (uint64_t(g.M - 1) * g.lda + g.K) * dtype_bytes(dtype_)};
    const ops::SmallMOperand b{.bytes = (uint64_t(g.N - 1) * g.ldb + g.K) * dtype_bytes(dtype_)};
    if (ops::small_m_addresses(ctx_.capabilities(), g, dtype_, a, b)) return "small_m addresses";
    return ops::small_m_texels(ctx_.capabilities(), g, dtype_, a, b) ? "small_m texels" : "small_m";
  }
  return gemm_tiles(g0).name();
}

// Row statistics (RowStats) need the direct kernel's subgroups: shuffles for its rows,
// arithmetic for the sums; the host-side rule, shared by gemm() and the callers sizing
// the buffers.
static bool direct_row_stats(const Capabilities& caps, const GemmTiles& t) {
  return t.strategy == GemmStrategy::Direct && ops::direct_gemm_shuffles(caps, t) && caps.subgroup_arithmetic;
}

uint32_t Ops::gemm_row_stats_parts(const Gemm& g) const {
  if (g.M <= kSmallM || g.batch != 1 || g.heads != 1 || g.split.column || g.trans_a) return 0;
  GemmTiles t = gemm_tiles(g);
  const Capabilities& caps = ctx_.capabilities();
  if (!direct_row_stats(caps, t)) return 0;
  return (g.N + t.bn - 1) / t.bn * (t.invocations() / caps.subgroup_size);
}

std::optional<RowStats> Ops::gemm(CommandList& cl, const Gemm& g, const BufferView& a, const BufferView& b,
                                  const BufferView& c, const std::optional<BufferView>& bias,
                                  const std::optional<BufferView>& residual, const std::optional<DecodeStep>& step,
                                  const std::optional<BufferView>& split_out, const std::optional<NormWeights>& norm,
                                  const GemmRowStats& stats) {
  return gemm_impl(cl, g, a, b, c, bias, residual, step, split_out, norm, stats, nullptr);
}

// The norm in the product's dispatch where the decode-step kernel runs with subgroup
// arithmetic (lavapipe, Xeon, Mesa 25.0.7: Transformer-base decoding without its 18
// layer_norm dispatches a token ran ~5% faster); else the product, then a layer_norm.
void Ops::gemm_normed(CommandList& cl, const Gemm& g, const BufferView& a, const BufferView& b, const BufferView& c,
                      const std::optional<BufferView>& bias, const std::optional<BufferView>& residual,
                      const OutputNorm& norm) {
  if (g.batch != 1 || g.heads != 1 || g.split.column || g.norm_of != NormOf::None || g.glu || g.trans_a)
    throw Error("gemm_normed: one batch of heads, A not transposed, no split output, folded norm or gated product");
  if (g.ldc && g.ldc != g.N) throw Error("gemm_normed: C's rows must be N apart (ldc = N)");
  if (!(g.norm_eps >= 0)) throw Error("gemm_normed: norm_eps must be a non-negative number");
  need(norm.weights.gamma, g.N, "gemm_normed", "norm gamma");
  if (!g.norm_rms) need(norm.weights.beta, g.N, "gemm_normed", "norm beta");
  need(norm.out, uint64_t(g.M) * g.N, "gemm_normed", "normalised output");
  if (norm.tickets) need(*norm.tickets, 1, "gemm_normed", "tickets", DType::F32);  // one 32-bit counter
  const uint64_t weight_bytes = uint64_t(g.N) * (g.ldb ? g.ldb : g.K) * dtype_bytes(dtype_);
  if (norm.tickets && g.M <= kSmallM && g.trans_b && ops::small_m_subgroups(ctx_.capabilities(), g) &&
      fits_one_binding(weight_bytes)) {  // (a weight split by rows would be normalised in pieces)
    gemm_impl(cl, g, a, b, c, bias, residual, std::nullopt, std::nullopt, std::nullopt, {}, &norm);
    return;
  }
  gemm(cl, g, a, b, c, bias, residual);
  layer_norm(cl, {.rows = g.M, .cols = g.N, .eps = g.norm_eps, .rms = g.norm_rms}, c, norm.weights.gamma,
             norm.weights.beta, norm.out);
}

std::optional<RowStats> Ops::gemm_impl(CommandList& cl, const Gemm& g0, const BufferView& a, const BufferView& b,
                                       const BufferView& c, const std::optional<BufferView>& bias,
                                       const std::optional<BufferView>& residual, const std::optional<DecodeStep>& step,
                                       const std::optional<BufferView>& split_out, const std::optional<NormWeights>& norm,
                                       const GemmRowStats& stats, const OutputNorm* out_norm) {
  Gemm g = g0;
  if (g.M == 0 || g.N == 0 || g.K == 0 || g.batch == 0 || g.heads == 0)
    throw Error("gemm: M, N, K, batch and heads must be at least 1 (got M=" + std::to_string(g.M) +
                " N=" + std::to_string(g.N) + " K=" + std::to_string(g.K) + ")");
  if (!g.lda) g.lda = g.trans_a ? g.M : g.K;
  if (!g.ldb) g.ldb = g.trans_b ? g.K : g.N;
  // A weight larger than one binding may hold (a 50k-token output projection in fp32 on a
  // device that binds 128 MiB): the product in slices of its rows, each a column range
  // of C (and of the bias and residual), every slice a binding of its own.
  const uint64_t e = dtype_bytes(dtype_), range = ctx_.capabilities().max_storage_buffer_range;
  if (g.glu) {
    if (!g.trans_b) throw Error("gemm: a gated (SwiGLU) product needs B as a Linear weight [2N, K] (trans_b)");
    if (g.split.column) throw Error("gemm: a gated (SwiGLU) product has no split output");
    if (!fits_one_binding(uint64_t(2) * g.N * g.ldb * e))
      throw Error("gemm: a gated (SwiGLU) product's weight of " + std::to_string(2ull * g.N * g.ldb * e) +
                  " bytes is larger than one binding of device '" + ctx_.capabilities().name +
                  "' (run the gate and up as a plain product, then swiglu)");
  }
  if (g.trans_b && g.batch == 1 && g.heads == 1 && !g.split.column && g.norm_of != NormOf::Residual && !step &&
      b.size > range && uint64_t(g.N) * g.ldb * e > range) {
    const uint64_t fit = range / (uint64_t(g.ldb) * e);  // rows of B one binding holds
    if (fit == 0) throw Error("gemm: a single row of B is larger than one binding of device '" + ctx_.capabilities().name + "'");
    const uint32_t rows = uint32_t(std::min<uint64_t>(fit >= 64 ? fit / 64 * 64 : fit, g.N));
    if (!g.ldc) g.ldc = g.N;
    if (!g.ldr) g.ldr = g.N;
    auto from = [&](const BufferView& v, uint64_t elements) {
      if (elements * e > v.size) throw Error("gemm: a view is too small for its columns");
      return BufferView{v.alloc, v.offset + elements * e, v.size - elements * e};
    };
    for (uint32_t n0 = 0; n0 < g.N; n0 += rows) {
      Gemm part = g;
      part.N = std::min(rows, g.N - n0);
      const BufferView bp{b.alloc, b.offset + uint64_t(n0) * g.ldb * e,
                          std::min<uint64_t>(b.size - uint64_t(n0) * g.ldb * e, uint64_t(part.N) * g.ldb * e)};
      gemm(cl, part, a, bp, from(c, n0), bias ? std::optional(from(*bias, n0)) : std::nullopt,
           residual ? std::optional(from(*residual, n0)) : std::nullopt, std::nullopt, std::nullopt, norm);
    }
    return std::nullopt;  // the slices' statistics would be partial rows: none written
  }
  const GemmSplit& sp = g.split;
  if (sp.column && (sp.column >= g.N || !split_out || g.heads != 1))
    throw Error("gemm: a split output needs its buffer, a split column inside N and heads = 1");
  if (!sp.column && split_out) throw Error("gemm: a split output was given but no split column");
  const uint32_t c_cols = sp.column ? sp.column : g.N, c2_cols = g.N - c_cols;
  const uint32_t ldc2 = sp.ld ? sp.ld : c2_cols;
  if (!g.ldc) g.ldc = c_cols;
  if (!g.ldr) g.ldr = g.N;
  // Inputs may overlap (a sliding window over a series is A with lda < K); outputs may not.
  if (g.ldc < c_cols) throw Error("gemm: ldc is smaller than a row of C");
  if (sp.column && ldc2 < c2_cols) throw Error("gemm: the split output's ld is smaller than its rows");
  if (sp.column && g.batch > 1 && sp.stride == 0)
    throw Error("gemm: batched products need a non-zero split output stride (they would overwrite each other)");
  const uint32_t batches = g.batch * g.heads;
  if (batches > 1 && ((g.batch > 1 && g.stride_c.outer == 0) || (g.heads > 1 && g.stride_c.inner == 0)))
    throw Error("gemm: batched products need a non-zero output stride (they would overwrite each other)");

  auto last = [&](const Strides& s) { return (g.batch - 1) * s.outer + (g.heads - 1) * s.inner; };
  const uint64_t a_rows = g.trans_a ? g.K : g.M, a_cols = g.trans_a ? g.M : g.K;
  const uint64_t b_rows = g.trans_b ? uint64_t(g.glu ? 2 : 1) * g.N : g.K, b_cols = g.trans_b ? g.K : g.N;
  need(a, last(g.stride_a) + (a_rows - 1) * g.lda + a_cols, "gemm", "A");
  need(b, last(g.stride_b) + (b_rows - 1) * g.ldb + b_cols, "gemm", "B");
  const uint64_t step_rows = step ? step->max_step : 0;  // stepping, the cache's rows start at row `step`
  need(c, last(g.stride_c) + (g.M + (sp.column ? 0 : step_rows) - 1) * g.ldc + c_cols, "gemm", "C");
  if (sp.column)
    need(*split_out, (g.batch - 1) * sp.stride + (g.M + step_rows - 1) * ldc2 + c2_cols, "gemm", "split output");
  if (step) need_step(*step, "gemm");
  if (bias) need(*bias, uint64_t(g.glu ? 2 : 1) * g.N, "gemm", "bias");  // a gated product's: gates', then ups'
  if (residual) need(*residual, last(g.stride_r) + (uint64_t(g.M) - 1) * g.ldr + g.N, "gemm", "residual");
  if (g.norm_of != NormOf::None) {
    if (!norm) throw Error("gemm: a folded LayerNorm needs its gamma and beta");
    if (g.trans_a || g.heads != 1 || (g.M <= kSmallM && !g.trans_b))
      throw Error("gemm: a LayerNorm folds only into a product whose A is not transposed, with one batch of heads "
                  "(and, at most " + std::to_string(kSmallM) + " rows, B a Linear weight [N, K])");
    if (g.norm_of == NormOf::Residual && !residual) throw Error("gemm: a norm of the residual needs a residual");
    if (!(g.norm_eps >= 0)) throw Error("gemm: norm_eps must be a non-negative number");
    const uint32_t cols = g.norm_of == NormOf::A ? g.K : g.N;
    need(norm->gamma, cols, "gemm", "norm gamma");
    need(norm->beta, cols, "gemm", "norm beta");
  } else if (norm) {
    throw Error("gemm: norm weights were given but Gemm::norm_of is None");
  }
  if (stats.in && g.norm_of == NormOf::None) throw Error("gemm: row statistics in need a folded norm (Gemm::norm_of)");
  if (stats.in && stats.in->parts == 0) throw Error("gemm: row statistics in with 0 partials per row");

  const uint32_t flags = (g.trans_a ? GEMM_FLAG_TRANS_A : 0u) | (g.trans_b ? GEMM_FLAG_TRANS_B : 0u) |
                         (bias ? GEMM_FLAG_BIAS : 0u) | (residual ? GEMM_FLAG_RESIDUAL : 0u) |
                         (step ? GEMM_FLAG_STEP_ROWS : 0u) | (uint32_t(g.act) << GEMM_ACT_SHIFT) |
                         (g.norm_of == NormOf::A ? GEMM_FLAG_NORM_A : 0u) |
                         (g.norm_of == NormOf::Residual ? GEMM_FLAG_NORM_R : 0u) |
                         ((g.norm_of != NormOf::None || out_norm) && g.norm_rms ? GEMM_FLAG_NORM_RMS : 0u) |
                         (g.glu ? GEMM_FLAG_GLU : 0u);
  GemmPush push{g.M, g.N, g.K, g.lda, g.ldb, g.ldc, g.ldr, g.heads,
                {narrow(g.stride_a.outer, "stride"), narrow(g.stride_a.inner, "stride")},
                {narrow(g.stride_b.outer, "stride"), narrow(g.stride_b.inner, "stride")},
                {narrow(g.stride_c.outer, "stride"), narrow(g.stride_c.inner, "stride")},
                {narrow(g.stride_r.outer, "stride"), narrow(g.stride_r.inner, "stride")},
                g.alpha, flags, 0, 0, 0, 0, sp.column, ldc2, narrow(sp.stride, "stride"), 0, g.norm_eps};
  const Placed pa = place(a, "gemm"), pb = place(b, "gemm"), pc = place(c, "gemm");
  // An absent bias or norm is bound as A's aligned view (never read; A itself may start
  // anywhere, e.g. at one head's columns).
  const Placed placeholder{pa.view, 0};
  const Placed pbias = bias ? place(*bias, "gemm") : placeholder, pr = place(residual ? *residual : a, "gemm");
  const Placed pc2 = place(split_out ? *split_out : out_norm ? out_norm->out : c, "gemm");
  if (out_norm) push.ldc2 = g.N;  // y = LN(C) [M, N] at C2 (gemm_small_m.comp's NORM_OUT)
  if (pbias.base) throw Error("gemm: the bias view must start at a descriptor-aligned offset");
  const std::optional<NormWeights> weights = out_norm ? std::optional(out_norm->weights) : norm;
  const Placed pgamma = weights ? place(weights->gamma, "gemm") : placeholder;
  const Placed pbeta = weights ? place(weights->beta, "gemm") : placeholder;
  const Placed ptickets = out_norm ? place(*out_norm->tickets, "gemm") : placeholder;
  if (weights && (pgamma.base || pbeta.base || ptickets.base))
    throw Error(out_norm ? "gemm_normed: the norm's gamma and beta and the tickets must start at descriptor-aligned offsets"
                         : "gemm: the norm's gamma and beta must start at descriptor-aligned offsets");
  push.base_a = pa.base;
  push.base_b = pb.base;
  push.base_c = pc.base;
  push.base_r = pr.base;
  push.base_c2 = pc2.base;
  const auto& caps = ctx_.capabilities();
  // Whether A's and B's rows, batches and offsets all start on multiples of `n` elements
  // and K is one: the kernels' vector loads (vec4s; the cooperative-matrix kernel's
  // wide staging, eight halves) read whole vectors only then.
  auto rows_on_vectors = [&](uint32_t n) {
    return g.K % n == 0 && g.lda % n == 0 && g.ldb % n == 0 && pa.base % n == 0 && pb.base % n == 0 &&
           push.stride_a[0] % n == 0 && push.stride_a[1] % n == 0 && push.stride_b[0] % n == 0 &&
           push.stride_b[1] % n == 0;
  };

  Kernel k;
  Groups groups;
  std::string label;
  uint32_t bindings = 9;  // the decode-step kernel's (it has the fold's weights always)
  Placed stats_in = placeholder, stats_out = placeholder;
  uint32_t slices = 1;  // split-K's (GemmTiles::split_k), as run
  uint64_t partial_bytes = 0;
  std::optional<RowStats> written;
  const bool small = g.M <= kSmallM;
  if (small) {
    // Decode step: stream the weights once.
    const bool subgroups = ops::small_m_subgroups(caps, g);
    if (subgroups) {
      // One row (batch-1 decoding) as a variant of its own, whose loops run that row
      // alone (faster on lavapipe); 2 to 4 rows share one, so a warm-up that runs one beam
      // search has compiled every decode step. On CPU drivers, 8 columns a subgroup where
      // K >= 2048 (one load of A's texel per 8 of B's), else 4: each measured the faster
      // there (docs/performance.md).
      const uint32_t wg = std::max<uint32_t>(64, caps.subgroup_size);
      // (at most the subgroup's lanes: each column's sum is stored by the lane of its index)
      const uint32_t cols = std::min<uint32_t>(caps.type == DeviceType::Cpu && g.K >= 2048 ? 8 : 4, caps.subgroup_size);
      const bool vec4 = rows_on_vectors(4);
      Defines d = {{"SUBGROUP_REDUCE", "1"}, {"WG_SIZE", std::to_string(wg)}, {"COLS", std::to_string(cols)}};
      if (g.M == 1) d.emplace_back("ROWS", "1");
      if (vec4) d.emplace_back("VEC4_K", "1");
      if (g.norm_of != NormOf::None) d.emplace_back("NORM_FOLDED", "1");
      if (out_norm) d.emplace_back("NORM_OUT", "1"), bindings = 10;  // + the tickets
      const ops::SmallMOperand oa{pa.view.offset, pa.base, pa.view.size}, ob{pb.view.offset, pb.base, pb.view.size};
      bool addresses = vec4 && ops::small_m_addresses(caps, g, dtype_, oa, ob);
      if (g.address_weights == true && !addresses) throw Error("gemm: A and B cannot be read through buffer addresses");
      if (addresses) {
        const uint64_t at_a = ctx_.device_address(pa.view), at_b = ctx_.device_address(pb.view);
        if ((at_a | at_b) % 16) {  // blocks' buffers start aligned on every driver seen; never assumed
          if (g.address_weights == true)
            throw Error("gemm: A or B lies at a buffer address that is not 16-byte aligned on device '" + caps.name + "'");
          addresses = false;
        }
        push.address_a[0] = uint32_t(at_a), push.address_a[1] = uint32_t(at_a >> 32);
        push.address_b[0] = uint32_t(at_b), push.address_b[1] = uint32_t(at_b >> 32);
      }
      const bool texels = vec4 && !addresses && ops::small_m_texels(caps, g, dtype_, oa, ob);
      if (g.texel_weights == true && !texels) throw Error("gemm: A and B cannot be read as texels");
      if (texels || addresses) d.emplace_back("TEXEL_B", "1");  // the loop over 16-byte units
      if (addresses) d.emplace_back("ADDRESS_AB", "1");       // ... read through addresses
      const TexelFormat f = dtype_ == DType::F16 ? TexelFormat::Rgba32Ui : TexelFormat::Rgba32F;
      k = kernel("gemm_small_m.comp", d, bindings, sizeof push, {},
                 texels ? std::vector<TexelFormat>{f, f} : std::vector<TexelFormat>{});
      label = std::string(addresses ? "gemm_small_m addresses" : texels ? "gemm_small_m texels" : "gemm_small_m") +
              (out_norm ? " normed" : "");
      const uint32_t per_group = wg / caps.subgroup_size * (g.glu ? cols / 2 : cols);  // outputs
      groups = {(g.N + per_group - 1) / per_group, 1, batches};
    } else {
      if (g.address_weights == true)
        throw Error("gemm: A and B cannot be read through buffer addresses on device '" + caps.name +
                    "' (the small-M kernel's address path needs subgroup arithmetic)");
      if (g.texel_weights == true) throw Error("gemm: B cannot be read as texels on device '" + caps.name +
                                               "' (the small-M kernel's texel path needs subgroup arithmetic)");
      label = "gemm_small_m";
      const uint32_t wg = std::min<uint32_t>(256, caps.max_workgroup_invocations);
      const uint32_t lanes = std::min<uint32_t>(32, wg);
      Defines d = {{"WG_SIZE", std::to_string(wg)}, {"LANES", std::to_string(lanes)}};
      if (g.norm_of != NormOf::None) d.emplace_back("NORM_FOLDED", "1");
      k = kernel("gemm_small_m.comp", d, 9, sizeof push);
      const uint32_t cols = g.trans_b ? wg / lanes : wg;
      groups = {(g.N + cols - 1) / cols, 1, batches};
    }
  } else {
    GemmTiles t = gemm_tiles(g);
    const bool folded = g.norm_of != NormOf::None;
    if (g.glu) {
      // Tiles that cannot pair gates with ups give way to the default table's (which
      // can: every default TN is even); a caller's refuse.
      std::string problem = gemm_glu_problem(t);
      if (!problem.empty() && !g.tiles) problem = gemm_glu_problem(t = default_gemm_tiles(g));
      if (!problem.empty()) throw Error("gemm: " + t.name() + " on device '" + caps.name + "': " + problem);
    }
    if (folded) {
      // Tuned tiles that cannot hold the fold (the cooperative-matrix kernel, or too little
      // shared memory for the statistics) give way to the default table's; a caller's refuse.
      std::string problem = gemm_norm_fold_problem(caps, t);
      if (!problem.empty() && !g.tiles) problem = gemm_norm_fold_problem(caps, t = default_gemm_tiles(g));
      if (!problem.empty()) throw Error("gemm: " + t.name() + " on device '" + caps.name + "': " + problem);
    }
    // vec4 global loads when every row and batch of A and B starts 16-byte aligned.
    const bool vec4_nt = !g.trans_a && g.trans_b && rows_on_vectors(4);
    // Row statistics: read where given and this kernel can, written where asked and it
    // can (the fold's variant, with ROW_STATS, runs both, its norm flags off when unused).
    const bool row_stats = direct_row_stats(caps, t) && g.batch == 1 && g.heads == 1 && !step &&
                           ((stats.in && folded) || (stats.out && !sp.column && !g.glu));  // a split C: no whole rows
    if (row_stats) {
      const uint32_t parts_out = (g.N + t.bn - 1) / t.bn * (t.invocations() / caps.subgroup_size);
      if (stats.in) {
        need(stats.in->view, uint64_t(g.M) * stats.in->parts * 4, "gemm", "row statistics in", DType::F32);
        push.flags |= GEMM_FLAG_STATS_IN;
        push.stats_parts = stats.in->parts;
        stats_in = place(stats.in->view, "gemm");
      }
      if (stats.out && !sp.column && !g.glu) {
        need(*stats.out, uint64_t(g.M) * parts_out * 4, "gemm", "row statistics out", DType::F32);
        push.flags |= GEMM_FLAG_STATS_OUT;
        stats_out = place(*stats.out, "gemm");
        written = RowStats{*stats.out, parts_out};
      }
      if (stats_in.base || stats_out.base) throw Error("gemm: row statistics must start at descriptor-aligned offsets");
    }
    Defines d;
    if (vec4_nt) d.emplace_back("VEC4_NT", "1");
    if (folded || row_stats) {
      d.emplace_back("NORM_FOLDED", "1");
      if (t.strategy == GemmStrategy::Direct && ops::direct_gemm_shuffles(caps, t) && caps.subgroup_arithmetic) {
        // Each subgroup its rows' statistics, in registers (gemm_direct.comp).
        d.emplace_back("NORM_SUBGROUP", "1");
        d.emplace_back("NORM_PRIVATE_ROWS", std::to_string(t.tm));
        if (row_stats) d.emplace_back("ROW_STATS", "1");
      } else {
        // Each workgroup its rows' statistics (gemm_norm_rows.glsl): NORM_ROWS rows in
        // NORM_PARTS slices, one invocation each, in shared memory beside the tiles.
        const GemmNormRows n = gemm_norm_rows(t);
        d.emplace_back("NORM_ROWS", std::to_string(n.rows));
        d.emplace_back("NORM_PARTS", std::to_string(n.parts));
      }
    }
    bindings = row_stats ? 11 : folded ? 9 : 7;
    // Split-K where the tiles ask for it (never with a fold: gemm_norm_fold_problem),
    // and one pass where K is a single BK step or the partials would not fit one
    // binding or the grid. Always the tiles' slice count, one pipeline per design: where
    // K has fewer BK steps, the last slices sum nothing and write zeros.
    if (t.split_k > 1 && !folded && !row_stats && g.K > t.bk) {
      slices = t.split_k;
      partial_bytes = uint64_t(batches) * slices * g.M * g.N * 4;
      if (partial_bytes > caps.max_storage_buffer_range || uint64_t(batches) * slices > caps.max_workgroup_count[2])
        slices = 1;
      if (slices > 1) d.emplace_back("SPLIT_K", std::to_string(slices));
    }
    if (g.address_weights == true)
      throw Error("gemm: A and B are read through buffer addresses only by the decode-step kernel (at most " +
                  std::to_string(kSmallM) + " rows), not by " + t.name());
    if (g.texel_weights == true && t.strategy != GemmStrategy::Direct)
      throw Error("gemm: A and B cannot be read as texels by " + t.name() + " (only the direct and decode-step kernels can)");
    // Prefetch where the tiles ask for it and A's and B's rows are vec4s (else the same
    // tiles without it).
    const bool prefetch = t.prefetch && vec4_nt;
    if (t.strategy == GemmStrategy::CoopMatNV) {
      Defines cd;  // its only defines (it never folds)
      if (slices > 1) cd.emplace_back("SPLIT_K", std::to_string(slices));
      if (prefetch) cd.emplace_back("PREFETCH", "1");
      // Wide staging where the rows are whole uvec4s of eight halves (else the design's
      // f16vec4 prefetch, which gemm_tiles_problem also sizes it for).
      if (t.wide && prefetch && rows_on_vectors(8)) cd.emplace_back("WIDE", "1");
      if (t.prefetch) cd.emplace_back("PREFETCH_LAYOUT", "1");  // the design's padded rows and epilogue, either way
      if (caps.cooperative_matrix_emulated) cd.emplace_back("COOPMAT_EMULATED", "1");
      k = kernel("gemm_coopmat.comp", cd, 7, sizeof push, {t.invocations(), t.bm, t.bn, t.bk, t.tm, t.tn});
    } else if (t.strategy == GemmStrategy::Direct) {
      const bool shuffle = ops::direct_gemm_shuffles(caps, t);
      if (shuffle) d.emplace_back("SHUFFLE_A", "1");
      const bool texels = ops::direct_texels(caps, g, dtype_, vec4_nt, pa.view, pb.view);
      if (texels) d.emplace_back("TEXEL_AB", "1");
      const TexelFormat f = dtype_ == DType::F16 ? TexelFormat::Rgba32Ui : TexelFormat::Rgba32F;
      k = kernel("gemm_direct.comp", d, bindings, sizeof push,
                 shuffle ? std::vector<uint32_t>{t.invocations(), t.tm, t.tn, caps.subgroup_size}
                         : std::vector<uint32_t>{t.invocations(), t.tm, t.tn},
                 texels ? std::vector<TexelFormat>{f, f} : std::vector<TexelFormat>{});
      if (texels) label = "texels ";
    }
    else {
      if (prefetch) d.emplace_back("PREFETCH", "1");
      k = kernel("gemm.comp", d, bindings, sizeof push, {t.invocations(), t.bm, t.bn, t.bk, t.tm, t.tn});
    }
    const uint32_t outputs = g.glu ? t.bn / 2 : t.bn;  // a gated product's tile: its gates', then their ups'
    groups = {(g.N + outputs - 1) / outputs, (g.M + t.bm - 1) / t.bm, batches};
    label = "gemm " + t.name() + (label.empty() ? "," : " " + label + ",");
  }
  label += " " + std::to_string(g.M) + "x" + std::to_string(g.N) + "x" + std::to_string(g.K);
  // Absent operands are bound to A (or C) as placeholders; the kernel never touches them.
  const BufferView step_view = step ? step->state : pa.view;
  if (slices > 1) {
    // Split-K: the slices' fp32 partial sums, [batch][slice][M][N], in a buffer of this
    // recording's own (a replay reuses it; another recording has its own), then one
    // pass adding them in order and applying the epilogue.
    Buffer partials = ctx_.buffer(partial_bytes, "gemm split-K partials");
    cl.dispatch(k, {groups.x, groups.y, batches * slices},
                {in(pa.view), in(pb.view), partials.out(), in(pbias.view), in(pr.view), in(step_view), in(pc2.view)},
                push, label + " split " + std::to_string(slices));
    Kernel reduce = kernel("gemm_split_k_reduce.comp", {{"SLICES", std::to_string(slices)}}, 8, sizeof push);
    cl.dispatch(reduce, {(g.N + 63) / 64, g.M, batches},
                {in(pa.view), in(pb.view), out(pc.view), in(pbias.view), in(pr.view), in(step_view), out(pc2.view),
                 partials.in()},
                push, "gemm split-K reduce " + std::to_string(g.M) + "x" + std::to_string(g.N));
    return std::nullopt;
  }
  if (out_norm)  // + the norm's gamma and beta, y = LN(C) at C2's binding, and the tickets
    cl.dispatch(k, groups,
                {in(pa.view), in(pb.view), out(pc.view), in(pbias.view), in(pr.view), in(step_view), out(pc2.view),
                 in(pgamma.view), in(pbeta.view), inout(ptickets.view)},
                push, label);
  else if (bindings == 11)  // + the folded norm's gamma and beta, the row statistics in and out
    cl.dispatch(k, groups,
                {in(pa.view), in(pb.view), out(pc.view), in(pbias.view), in(pr.view), in(step_view), out(pc2.view),
                 in(pgamma.view), in(pbeta.view), in(stats_in.view), out(stats_out.view)},
                push, label);
  else if (small || g.norm_of != NormOf::None)  // + the folded norm's gamma and beta
    cl.dispatch(k, groups,
                {in(pa.view), in(pb.view), out(pc.view), in(pbias.view), in(pr.view), in(step_view), out(pc2.view),
                 in(pgamma.view), in(pbeta.view)},
                push, label);
  else
    cl.dispatch(k, groups,
                {in(pa.view), in(pb.view), out(pc.view), in(pbias.view), in(pr.view), in(step_view), out(pc2.view)},
                push, label);
  return written;
}

}  // namespace vkf
