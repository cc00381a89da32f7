#include <algorithm>
#include <string>

#include "gemm_flags.h"  // shaders/: GEMM_COLUMNS_MAX_M
#include "gemm_plan.hpp"
#include "gemm_tiles.hpp"
#include "vkformer/gemm_tuning.hpp"
#include "vkformer/ops.hpp"
#include "vkformer/tensor_io.hpp"

namespace vkf {

using ops::GemmBindings;
using ops::GemmPlan;
constexpr uint32_t kSmallM = Ops::kMaxFoldedNormRows;

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

GemmTiles Ops::gemm_tiles(const Gemm& g) const {
  const auto tuning = ops::cached_gemm_tuning(ctx_, dtype_);
  return ops::planned_gemm_tiles(ctx_.capabilities(), ctx_.policy(), tuning ? &*tuning : nullptr, g, dtype_);
}

GemmTiles Ops::default_gemm_tiles(const Gemm& g) const {
  return ops::default_gemm_tiles(ctx_.capabilities(), g, dtype_);
}

bool Ops::fits_one_binding(uint64_t bytes) const { return bytes <= ctx_.capabilities().max_storage_buffer_range; }

// The plan for `g` with A and B assumed to start aligned (the views are not known here).
std::string Ops::gemm_variant(const Gemm& g0) const {
  const Gemm g = ops::resolved_gemm(g0);
  if (g.M > kSmallM && !ops::gemm_columns_take(ctx_.capabilities(), g) && !gemm_reads_blocks(g))
    return gemm_tiles(g).name();
  ops::GemmProblem p{.g = g, .dtype = dtype_};
  p.a.bytes = (uint64_t(g.M - 1) * g.lda + g.K) * dtype_bytes(dtype_);
  p.b.bytes = g.b_blocks ? block_weight_bytes(*g.b_blocks, uint64_t(g.glu ? 2 : 1) * g.N, g.K)
                         : (uint64_t(g.N - 1) * g.ldb + g.K) * dtype_bytes(dtype_);
  p.split_given = g.split.column != 0;
  p.norm = g.norm_of != NormOf::None;
  p.residual_given = g.norm_of == NormOf::Residual;
  return ops::gemm_plan(ctx_.capabilities(), ctx_.policy(), nullptr, p).variant;
}

bool Ops::gemm_reads_blocks(const Gemm& g0) const {
  const Gemm g = ops::resolved_gemm(g0);
  if (g.M <= kSmallM || ops::gemm_columns_take(ctx_.capabilities(), g)) return true;
  return g.b_blocks && ops::gemm_tiles_read_blocks(ctx_.capabilities(), g, gemm_tiles(g));  // (the tiles only where they decide)
}

uint32_t Ops::gemm_row_stats_parts(const Gemm& g) const {
  if (g.M <= kSmallM || g.batch != 1 || g.heads != 1 || g.split.column || g.trans_a) return 0;
  return ops::gemm_row_stats_parts(ctx_.capabilities(), g, gemm_tiles(g));
}

bool Ops::blocks_need_scratch() const {
  // The rows where the kernels change (past the small-M kernel's, past the columns
  // kernel's), with and without a folded norm.
  for (uint32_t rows : {kSmallM + 1, uint32_t(GEMM_COLUMNS_MAX_M) + 1})
    for (NormOf norm : {NormOf::None, NormOf::A})
      if (!gemm_reads_blocks({.M = rows, .N = 256, .K = 256, .trans_b = true, .norm_of = norm,
                              .b_blocks = BlockType::Q8_0}))
        return true;
  return false;
}

std::optional<RowStats> Ops::gemm(CommandList& cl, const Gemm& g, const GemmOperands& o) {
  return record_gemm(cl, g, o, nullptr);
}

// The norm in the product's dispatch where the decode-step kernel runs with subgroup
// arithmetic (lavapipe, Xeon, Mesa 25.0.7: Transformer-base decoding without its 18
// layer_norm dispatches a token ran ~5% faster); else the product, then a layer_norm.
void Ops::gemm_normed(CommandList& cl, const Gemm& g, const GemmOperands& o, const OutputNorm& norm) {
  if (g.batch != 1 || g.heads != 1 || g.split.column || g.norm_of != NormOf::None || g.glu || g.trans_a)
    throw Error("gemm_normed: one batch of heads, A not transposed, no split output, folded norm or gated product");
  if (o.step || o.split_out || o.norm || o.stats.in || o.stats.out)
    throw Error("gemm_normed: no decode step, split output, folded norm or row statistics");
  if (g.ldc && g.ldc != g.N) throw Error("gemm_normed: C's rows must be N apart (ldc = N)");
  if (!(g.norm_eps >= 0)) throw Error("gemm_normed: norm_eps must be a non-negative number");
  need(norm.weights.gamma, g.N, "gemm_normed", "norm gamma");
  if (g.norm_kind == NormKind::LayerNorm) need(norm.weights.beta, g.N, "gemm_normed", "norm beta");
  need(norm.out, uint64_t(g.M) * g.N, "gemm_normed", "normalised output");
  if (norm.tickets) need(*norm.tickets, 1, "gemm_normed", "tickets", DType::F32);  // one 32-bit counter
  const uint64_t weight_bytes = uint64_t(g.N) * (g.ldb ? g.ldb : g.K) * dtype_bytes(dtype_);
  if (norm.tickets && g.M <= kSmallM && g.trans_b && ops::small_m_subgroups(ctx_.capabilities(), g) &&
      fits_one_binding(weight_bytes)) {  // (a weight split by rows would be normalised in pieces)
    record_gemm(cl, g, o, &norm);
    return;
  }
  gemm(cl, g, o);
  layer_norm(cl, {.rows = g.M, .cols = g.N, .eps = g.norm_eps, .kind = g.norm_kind}, o.c, norm.weights.gamma,
             norm.weights.beta, norm.out);
}

// Checks the views against the product, plans, and records the plan.
std::optional<RowStats> Ops::record_gemm(CommandList& cl, const Gemm& g0, const GemmOperands& o,
                                         const OutputNorm* out_norm) {
  const Gemm g = ops::resolved_gemm(g0);
  const Capabilities& caps = ctx_.capabilities();
  const uint64_t e = dtype_bytes(dtype_);
  // A prompt's product where no kernel reads the blocks itself (GPUs past the decode-step
  // kernel's rows): the weight dequantized into the scratch, then the plain product.
  const bool dequantized = g.b_blocks && !gemm_reads_blocks(g);
  if (dequantized) {
    const uint32_t rows = g.glu ? 2 * g.N : g.N;
    if (!o.scratch)
      throw Error("gemm: a product of " + std::to_string(g.M) + " rows reads B in " + block_type_name(*g.b_blocks) +
                  " blocks dequantized first: give GemmOperands::scratch ([" + std::to_string(rows) + ", " +
                  std::to_string(g.K) + "] values)");
    // (the weight's values only: the scratch is sized for the largest weight, which may
    // be larger than one binding where this one is not)
    const BufferView copy{o.scratch->alloc, o.scratch->offset, uint64_t(rows) * g.K * e};
    if (copy.size > o.scratch->size)
      throw Error("gemm: the scratch for a dequantized weight holds " + std::to_string(o.scratch->size) +
                  " bytes, not the " + std::to_string(copy.size) + " of [" + std::to_string(rows) + ", " +
                  std::to_string(g.K) + "] values");
    dequantize_blocks(cl, *g.b_blocks, o.b, copy, rows, g.K);
    Gemm plain = g;
    plain.b_blocks.reset();
    GemmOperands dequantized = o;
    dequantized.b = copy;
    dequantized.scratch.reset();
    return record_gemm(cl, plain, dequantized, out_norm);
  }
  if (const auto rows = ops::gemm_weight_slice_rows(caps, g, dtype_, o.b.size, o.step.has_value())) {
    // Each slice of B's rows a product of its own, a column range of C, the bias and the
    // residual, every slice a binding of its own.
    auto from = [&](const BufferView& v, uint64_t elements) {
      if (elements * e > v.size) throw Error("gemm: a view is too small for its columns");
      return BufferView{v.alloc, v.offset + elements * e, v.size - elements * e};
    };
    for (uint32_t n0 = 0; n0 < g.N; n0 += *rows) {
      Gemm part = g;
      part.N = std::min(*rows, g.N - n0);
      const BufferView bp{o.b.alloc, o.b.offset + uint64_t(n0) * g.ldb * e,
                          std::min<uint64_t>(o.b.size - uint64_t(n0) * g.ldb * e, uint64_t(part.N) * g.ldb * e)};
      gemm(cl, part,
           {.a = o.a, .b = bp, .c = from(o.c, n0), .bias = o.bias ? std::optional(from(*o.bias, n0)) : std::nullopt,
            .residual = o.residual ? std::optional(from(*o.residual, n0)) : std::nullopt, .norm = o.norm});
    }
    return std::nullopt;  // the slices' statistics would be partial rows: none written
  }
  check_gemm_views(g, o);

  const Placed pa = place(o.a, "gemm"), pb = place(o.b, "gemm"), pc = place(o.c, "gemm");
  // An absent bias or norm is bound as A's aligned view (never read; A itself may start
  // anywhere, e.g. at one head's columns).
  const Placed placeholder{pa.view, 0};
  const Placed pbias = o.bias ? place(*o.bias, "gemm") : placeholder, pr = place(o.residual ? *o.residual : o.a, "gemm");
  const Placed pc2 = place(o.split_out ? *o.split_out : out_norm ? out_norm->out : o.c, "gemm");
  if (pbias.base) throw Error("gemm: the bias view must start at a descriptor-aligned offset");
  if (g.b_blocks && pb.base) throw Error("gemm: B in blocks must start at a descriptor-aligned offset");
  const std::optional<NormWeights> weights = out_norm ? std::optional(out_norm->weights) : o.norm;
  const Placed pgamma = weights ? place(weights->gamma, "gemm") : placeholder;
  const Placed pbeta = weights ? place(weights->beta, "gemm") : placeholder;
  const Placed ptickets = out_norm ? place(*out_norm->tickets, "gemm") : placeholder;
  if (weights && (pgamma.base || pbeta.base || ptickets.base))
    throw Error(out_norm ? "gemm_normed: the norm's gamma and beta and the tickets must start at descriptor-aligned offsets"
                         : "gemm: the norm's gamma and beta must start at descriptor-aligned offsets");

  auto operand = [&](const Placed& p, bool address) {
    return ops::GemmOperand{.start = p.view.offset, .base = p.base, .bytes = p.view.size,
                            .address = address ? ctx_.device_address(p.view) : 0};
  };
  const bool addresses = g.M <= kSmallM && caps.buffer_device_address;  // the decode-step kernel may read them so
  const ops::GemmProblem problem{.g = g, .dtype = dtype_, .a = operand(pa, addresses), .b = operand(pb, addresses),
                                 .c = operand(pc, false), .residual = operand(pr, false),
                                 .split_out = operand(pc2, false), .bias = o.bias.has_value(),
                                 .residual_given = o.residual.has_value(), .step = o.step.has_value(),
                                 .split_given = o.split_out.has_value(), .norm = o.norm.has_value(),
                                 .stats_in_parts = o.stats.in ? std::optional(o.stats.in->parts) : std::nullopt,
                                 .stats_out = o.stats.out.has_value(), .out_norm = out_norm != nullptr};
  const auto tuning = g.M > kSmallM ? ops::cached_gemm_tuning(ctx_, dtype_) : std::nullopt;
  const GemmPlan plan = ops::gemm_plan(caps, ctx_.policy(), tuning ? &*tuning : nullptr, problem);

  // The row statistics the plan reads and writes, checked and placed.
  Placed stats_in = placeholder, stats_out = placeholder;
  std::optional<RowStats> written;
  if (plan.bindings == GemmBindings::RowStats) {
    if (o.stats.in) {
      need(o.stats.in->view, uint64_t(g.M) * o.stats.in->parts * 4, "gemm", "row statistics in", DType::F32);
      stats_in = place(o.stats.in->view, "gemm");
    }
    if (plan.stats_parts_out) {
      need(*o.stats.out, uint64_t(g.M) * *plan.stats_parts_out * 4, "gemm", "row statistics out", DType::F32);
      stats_out = place(*o.stats.out, "gemm");
      written = RowStats{*o.stats.out, *plan.stats_parts_out};
    }
    if (stats_in.base || stats_out.base) throw Error("gemm: row statistics must start at descriptor-aligned offsets");
  }
  return record(cl, plan, {in(pa.view), in(pb.view), out(pc.view), in(pbias.view), in(pr.view),
                           in(o.step ? o.step->state : pa.view), out(pc2.view)},
                {in(pgamma.view), in(pbeta.view), inout(ptickets.view), in(stats_in.view), out(stats_out.view)})
             ? std::nullopt
             : written;
}

// The views against the product's shape (the plan checks the product itself).
void Ops::check_gemm_views(const Gemm& g, const GemmOperands& o) const {
  auto last = [&](const Strides& s) { return (g.batch - 1) * s.outer + (g.heads - 1) * s.inner; };
  const GemmSplit& sp = g.split;
  const uint32_t c_cols = sp.column ? sp.column : g.N, c2_cols = g.N - c_cols, ldc2 = sp.ld ? sp.ld : c2_cols;
  const uint64_t a_rows = g.trans_a ? g.K : g.M, a_cols = g.trans_a ? g.M : g.K;
  const uint64_t b_rows = g.trans_b ? uint64_t(g.glu ? 2 : 1) * g.N : g.K, b_cols = g.trans_b ? g.K : g.N;
  need(o.a, last(g.stride_a) + (a_rows - 1) * g.lda + a_cols, "gemm", "A");
  if (g.b_blocks) {
    const uint64_t bytes = block_weight_bytes(*g.b_blocks, b_rows, g.K);
    if (!o.b.alloc || o.b.size < bytes)
      throw Error("gemm: B in " + std::string(block_type_name(*g.b_blocks)) + " blocks needs " + std::to_string(bytes) +
                  " bytes (upload_blocks of [" + std::to_string(b_rows) + ", " + std::to_string(g.K) +
                  "]) but its buffer view holds " + std::to_string(o.b.size));
  } else {
    need(o.b, last(g.stride_b) + (b_rows - 1) * g.ldb + b_cols, "gemm", "B");
  }
  const uint64_t step_rows = o.step ? o.step->max_step : 0;  // stepping, the cache's rows start at row `step`
  need(o.c, last(g.stride_c) + (g.M + (sp.column ? 0 : step_rows) - 1) * g.ldc + c_cols, "gemm", "C");
  if (sp.column && o.split_out)
    need(*o.split_out,
         sp.rows_are_items ? (g.M - 1) * sp.stride + step_rows * ldc2 + c2_cols
                           : (g.batch - 1) * sp.stride + (g.M + step_rows - 1) * ldc2 + c2_cols,
         "gemm", "split output");
  if (o.step) need_step(*o.step, "gemm");
  if (o.bias) need(*o.bias, uint64_t(g.glu ? 2 : 1) * g.N, "gemm", "bias");  // a gated product's: gates', then ups'
  if (o.residual) need(*o.residual, last(g.stride_r) + (uint64_t(g.M) - 1) * g.ldr + g.N, "gemm", "residual");
  if (g.norm_of != NormOf::None && o.norm) {
    const uint32_t cols = g.norm_of == NormOf::A ? g.K : g.N;
    need(o.norm->gamma, cols, "gemm", "norm gamma");
    need(o.norm->beta, cols, "gemm", "norm beta");
  }
}

// Records a plan: the kernel over `common` bindings (A, B, C, bias, residual, step, split
// output) and as many of `extra` (gamma, beta, tickets, then for row statistics gamma,
// beta, statistics in and out) as its bindings take. Whether it split K (no statistics
// written then).
bool Ops::record(CommandList& cl, const GemmPlan& plan, std::vector<Arg> common, std::vector<Arg> extra) {
  const Kernel k = kernel(plan.shader.c_str(), plan.defines, uint32_t(plan.bindings), sizeof plan.push, plan.spec,
                          plan.texels);
  if (plan.split_k > 1) {
    // Split-K: the slices' fp32 partial sums in a buffer of this recording's own (a
    // replay reuses it; another recording has its own), then one pass adding them in
    // order and applying the epilogue.
    const Buffer partials = ctx_.buffer(plan.partial_bytes, "gemm split-K partials");
    std::vector<Arg> slices = common;
    slices[2] = partials.out();
    slices[6] = in(slices[6].view);  // the split output is the reduction's to write
    cl.dispatch(k, {plan.groups.x, plan.groups.y, plan.groups.z * plan.split_k}, slices, plan.push,
                plan.label + " split " + std::to_string(plan.split_k));
    common.push_back(partials.in());
    const Kernel reduce = kernel("gemm_split_k_reduce.comp", plan.reduce_defines, 8, sizeof plan.push);
    cl.dispatch(reduce, plan.reduce_groups, common, plan.push,
                "gemm split-K reduce " + std::to_string(plan.push.M) + "x" + std::to_string(plan.push.N));
    return true;
  }
  switch (plan.bindings) {
    case GemmBindings::Plain: break;
    case GemmBindings::Folded: common.insert(common.end(), extra.begin(), extra.begin() + 2); break;
    case GemmBindings::Normed: common.insert(common.end(), extra.begin(), extra.begin() + 3); break;
    case GemmBindings::RowStats:
      common.insert(common.end(), {extra[0], extra[1], extra[3], extra[4]});
      break;
  }
  cl.dispatch(k, plan.groups, common, plan.push, plan.label);
  return false;
}

}  // namespace vkf
