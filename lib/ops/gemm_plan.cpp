#include "gemm_plan.hpp"

#include <algorithm>
#include <bit>
#include <string>

#include "gemm_flags.h"  // shaders/: flag bits shared with the GLSL kernels
#include "block_weights.hpp"
#include "gemm_tiles.hpp"
#include "texels.hpp"
#include "vkformer/tensor_io.hpp"

namespace vkf::ops {

namespace {

constexpr uint32_t kSmallM = GEMM_SMALL_M_MAX_M;        // MAX_M of gemm_small_m.comp
constexpr uint32_t kColumnsMaxM = GEMM_COLUMNS_MAX_M;  // the most rows gemm_columns.comp takes
static_assert(Ops::kMaxFoldedNormRows == kSmallM, "the decode-step kernel's rows");
static_assert(uint32_t(Activation::Relu) == GEMM_ACT_RELU && uint32_t(Activation::Gelu) == GEMM_ACT_GELU &&
                  uint32_t(Activation::GeluTanh) == GEMM_ACT_GELU_TANH && uint32_t(Activation::Silu) == GEMM_ACT_SILU &&
                  uint32_t(Activation::Tanh) == GEMM_ACT_TANH,
              "activation codes match gemm_flags.h");

uint32_t narrow(uint64_t v, const char* what) {
  if (v > 0xffffffffull) throw Error(std::string("gemm: ") + what + " does not fit 32 bits");
  return uint32_t(v);
}

std::string device(const Capabilities& caps) { return "device '" + caps.name + "'"; }

// Row statistics (RowStats) need the direct kernel's subgroups: shuffles for its rows,
// arithmetic for the sums.
bool direct_row_stats(const Capabilities& caps, const GemmTiles& t) {
  return t.strategy == GemmStrategy::Direct && direct_gemm_shuffles(caps, t) && caps.subgroup_arithmetic;
}

// What the product is, before any kernel is chosen: the rules every kernel shares.
void check(const Capabilities& caps, const GemmProblem& p) {
  const Gemm& g = p.g;
  const uint64_t e = dtype_bytes(p.dtype);
  if (g.glu) {
    if (!g.trans_b) throw Error("gemm: a gated (SwiGLU) product needs B as a Linear weight [2N, K] (trans_b)");
    if (g.split.column) throw Error("gemm: a gated (SwiGLU) product has no split output");
    if (uint64_t(2) * g.N * g.ldb * e > caps.max_storage_buffer_range)
      throw Error("gemm: a gated (SwiGLU) product's weight of " + std::to_string(2ull * g.N * g.ldb * e) +
                  " bytes is larger than one binding of " + device(caps) +
                  " (run the gate and up as a plain product, then swiglu)");
  }
  if (g.b_blocks) {
    const std::string type = block_type_name(*g.b_blocks);
    if (!g.trans_b || g.heads != 1 || g.stride_b.outer || g.stride_b.inner || g.trans_a)
      throw Error("gemm: B in " + type + " blocks is one Linear weight [N, K] (trans_b) shared by every batch item "
                  "(one head, no B strides), A not transposed");
    if (g.K % block_values(*g.b_blocks) || g.ldb != g.K)
      throw Error("gemm: B in " + type + " blocks needs K a multiple of " + std::to_string(block_values(*g.b_blocks)) +
                  " and its rows packed (ldb = K), not K " + std::to_string(g.K) + ", ldb " + std::to_string(g.ldb));
    // (past kSmallM rows: the columns kernel or the direct kernel, which plan_tiles checks;
    // Ops::gemm dequantizes a weight neither reads first, then plans the plain product)
    if (block_weight_bytes(*g.b_blocks, uint64_t(g.glu ? 2 : 1) * g.N, g.K) > caps.max_storage_buffer_range)
      throw Error("gemm: a weight in " + type + " blocks larger than one binding of " + device(caps));
  }
  const GemmSplit& sp = g.split;
  if (sp.column && (sp.column >= g.N || !p.split_given || g.heads != 1))
    throw Error("gemm: a split output needs its buffer, a split column inside N and heads = 1");
  if (!sp.column && p.split_given) throw Error("gemm: a split output was given but no split column");
  if (sp.rows_are_items && (!sp.column || g.batch * g.heads != 1 || sp.stride == 0))
    throw Error("gemm: a split output whose rows are batch items needs a split column, one batch of one head and a "
                "non-zero split output stride");
  // Inputs may overlap (a sliding window over a series is A with lda < K); outputs may not.
  if (g.ldc < (sp.column ? sp.column : g.N)) throw Error("gemm: ldc is smaller than a row of C");
  if (sp.column && sp.ld && sp.ld < g.N - sp.column) throw Error("gemm: the split output's ld is smaller than its rows");
  if (sp.column && g.batch > 1 && sp.stride == 0)
    throw Error("gemm: batched products need a non-zero split output stride (they would overwrite each other)");
  if (g.batch * g.heads > 1 && ((g.batch > 1 && g.stride_c.outer == 0) || (g.heads > 1 && g.stride_c.inner == 0)))
    throw Error("gemm: batched products need a non-zero output stride (they would overwrite each other)");
  if (g.norm_of != NormOf::None) {
    if (!p.norm) throw Error("gemm: a folded LayerNorm needs its gamma and beta");
    if (g.trans_a || g.heads != 1 || (g.M <= kSmallM && !g.trans_b))
      throw Error("gemm: a LayerNorm folds only into a product whose A is not transposed, with one batch of heads "
                  "(and, at most " + std::to_string(kSmallM) + " rows, B a Linear weight [N, K])");
    if (g.norm_of == NormOf::Residual && !p.residual_given) throw Error("gemm: a norm of the residual needs a residual");
    if (!(g.norm_eps >= 0)) throw Error("gemm: norm_eps must be a non-negative number");
  } else if (p.norm) {
    throw Error("gemm: norm weights were given but Gemm::norm_of is None");
  }
  if (p.stats_in_parts && g.norm_of == NormOf::None)
    throw Error("gemm: row statistics in need a folded norm (Gemm::norm_of)");
  if (p.stats_in_parts && *p.stats_in_parts == 0) throw Error("gemm: row statistics in with 0 partials per row");
}

// The push constants every kernel reads; the kernel's own parts are added by its plan.
GemmPush push_of(const GemmProblem& p) {
  const Gemm& g = p.g;
  const GemmSplit& sp = g.split;
  const uint32_t flags = (g.trans_a ? GEMM_FLAG_TRANS_A : 0u) | (g.trans_b ? GEMM_FLAG_TRANS_B : 0u) |
                         (p.bias ? GEMM_FLAG_BIAS : 0u) | (p.residual_given ? GEMM_FLAG_RESIDUAL : 0u) |
                         (p.step ? GEMM_FLAG_STEP_ROWS : 0u) | (uint32_t(g.act) << GEMM_ACT_SHIFT) |
                         (g.norm_of == NormOf::A ? GEMM_FLAG_NORM_A : 0u) |
                         (g.norm_of == NormOf::Residual ? GEMM_FLAG_NORM_R : 0u) |
                         ((g.norm_of != NormOf::None || p.out_norm) && g.norm_kind == NormKind::RMSNorm ? GEMM_FLAG_NORM_RMS : 0u) |
                         (g.glu ? GEMM_FLAG_GLU : 0u) | (sp.rows_are_items ? GEMM_FLAG_SPLIT_ITEMS : 0u);
  const uint32_t c2_cols = sp.column ? g.N - sp.column : 0;
  GemmPush push{g.M, g.N, g.K, g.lda, g.ldb, g.ldc, g.ldr, g.heads,
                {narrow(g.stride_a.outer, "stride"), narrow(g.stride_a.inner, "stride")},
                {narrow(g.stride_b.outer, "stride"), narrow(g.stride_b.inner, "stride")},
                {narrow(g.stride_c.outer, "stride"), narrow(g.stride_c.inner, "stride")},
                {narrow(g.stride_r.outer, "stride"), narrow(g.stride_r.inner, "stride")},
                g.alpha, flags, p.a.base, p.b.base, p.c.base, p.residual.base, sp.column,
                sp.ld ? sp.ld : c2_cols, narrow(sp.stride, "stride"), p.split_out.base, g.norm_eps};
  if (p.out_norm) push.ldc2 = g.N;  // y = LN(C) [M, N] at C2 (gemm_small_m.comp's NORM_OUT)
  return push;
}

// Whether A's and B's rows, batches and offsets all start on multiples of `n` elements
// and K is one: the kernels' vector loads (vec4s; the cooperative-matrix kernel's wide
// staging, eight halves) read whole vectors only then.
bool rows_on_vectors(const GemmProblem& p, const GemmPush& push, uint32_t n) {
  const Gemm& g = p.g;
  return g.K % n == 0 && g.lda % n == 0 && g.ldb % n == 0 && p.a.base % n == 0 && p.b.base % n == 0 &&
         push.stride_a[0] % n == 0 && push.stride_a[1] % n == 0 && push.stride_b[0] % n == 0 &&
         push.stride_b[1] % n == 0;
}

// The decode-step kernel over a weight in blocks (Gemm::b_blocks): with subgroup
// arithmetic a lane takes whole blocks (A's 8 vec4s of one, then each column's codes and
// scale), reading A and B as texels on CPU drivers where both fit; without, LANES
// invocations per column take its values one at a time.
void plan_small_m_blocks(const Capabilities& caps, const GemmProblem& p, GemmPlan& plan) {
  const Gemm& g = p.g;
  const BlockType t = *g.b_blocks;
  const uint32_t batches = g.batch * g.heads;
  plan.variant = std::string("small_m ") + block_type_name(t);
  if (g.address_weights == true)
    throw Error("gemm: B in blocks is not read through buffer addresses (address_weights)");
  if (!small_m_subgroups(caps, g)) {
    if (g.texel_weights == true) throw Error("gemm: B in blocks is read as texels only with subgroup arithmetic");
    const uint32_t wg = std::min<uint32_t>(256, caps.max_workgroup_invocations);
    const uint32_t lanes = std::min<uint32_t>(32, wg);
    plan.defines = {{"WG_SIZE", std::to_string(wg)}, {"LANES", std::to_string(lanes)}};
    if (g.norm_of != NormOf::None) plan.defines.emplace_back("NORM_FOLDED", "1");
    for (auto& d : block_defines(t, caps)) plan.defines.push_back(d);
    plan.groups = {(g.N + wg / lanes - 1) / (wg / lanes), 1, batches};
    plan.label = "gemm_" + plan.variant;
    return;
  }
  // A's rows as vec4s (the activations' rows always are: K is whole blocks).
  if (g.lda % 4 || p.a.base % 4 || plan.push.stride_a[0] % 4 || plan.push.stride_a[1] % 4)
    throw Error("gemm: with B in blocks, A's rows must start on whole vec4s (lda and A's offset multiples of 4)");
  const uint32_t wg = std::max<uint32_t>(64, caps.subgroup_size);
  const uint32_t cols = std::min<uint32_t>(caps.type == DeviceType::Cpu && g.K >= 2048 ? 8 : 4, caps.subgroup_size);
  Defines& d = plan.defines;
  d = {{"SUBGROUP_REDUCE", "1"}, {"WG_SIZE", std::to_string(wg)}, {"COLS", std::to_string(cols)}, {"VEC4_K", "1"}};
  if (g.M == 1) d.emplace_back("ROWS", "1");
  if (g.norm_of != NormOf::None) d.emplace_back("NORM_FOLDED", "1");
  if (p.out_norm) d.emplace_back("NORM_OUT", "1");
  for (auto& q : block_defines(t, caps)) d.push_back(q);
  // Texels where a CPU driver reads them well and both views hold whole ones (A's rows,
  // batches and start on 16-byte units).
  const uint32_t per_unit = 16 / dtype_bytes(p.dtype);
  const bool a_units = g.lda % per_unit == 0 && p.a.base % per_unit == 0 && plan.push.stride_a[0] % per_unit == 0 &&
                       plan.push.stride_a[1] % per_unit == 0 && g.K % per_unit == 0;
  const bool fit = a_units && texel_view_fits(caps, p.a.start, p.a.bytes) && texel_view_fits(caps, p.b.start, p.b.bytes);
  if (g.texel_weights == true && !fit)
    throw Error("gemm: A and B in blocks cannot be read as texels on " + device(caps));
  const bool texels = fit && g.texel_weights.value_or(caps.type == DeviceType::Cpu);
  if (texels) {
    d.emplace_back("TEXEL_B", "1");
    plan.texels = {p.dtype == DType::F16 ? TexelFormat::Rgba32Ui : TexelFormat::Rgba32F, TexelFormat::Rgba32Ui};
    plan.variant += " texels";
  }
  plan.label = "gemm_" + plan.variant + (p.out_norm ? " normed" : "");
  const uint32_t per_group = wg / caps.subgroup_size * (g.glu ? cols / 2 : cols);
  plan.groups = {(g.N + per_group - 1) / per_group, 1, batches};
}

// CPU drivers' products over weights in blocks (gemm_columns.comp): an invocation owns
// whole columns, so a weight is loaded once for all of a step's rows (1 to kColumnsMaxM:
// a batch of beams or of sentences; more rows, a prompt's, in chunks of kColumnsMaxM
// along y: no dequantized copy of the weight), and neighbouring invocations own neighbouring rows of a weight in
// blocks, which CPU drivers lay out interleaved (block_interleave). GPUs keep the
// small-M kernel, whose subgroups split K (an invocation per column would leave most of a
// GPU idle at these N). It reads weights in blocks only: over plain row-major weights it
// measured no faster than the small-M kernel at 1 row and 4x slower than the direct
// kernel at 16 (lavapipe, docs/performance.md), where neither unpacks codes.
// Whether it takes the product (its shape; the views are checked by plan_columns).
// Whether its views suit it: A's rows (and a plain B's) in whole 16-byte units, a plain
// B's view readable as texels.
// An operand's view read as whole 16-byte texels.
bool whole_texels(const Capabilities& caps, const GemmOperand& v) {
  return texel_view_fits(caps, v.start, v.bytes) && v.bytes % 16 == 0;
}
bool b_as_texels(const Capabilities& caps, const GemmProblem& p) {
  return whole_texels(caps, p.b) && p.g.texel_weights != false;
}
bool columns_fit(const Capabilities& caps, const GemmProblem& p, const GemmPush& push) {
  return rows_on_vectors(p, push, 16 / dtype_bytes(p.dtype)) && (p.g.b_blocks || b_as_texels(caps, p));
}

void plan_columns(const Capabilities& caps, const GemmProblem& p, GemmPlan& plan) {
  const Gemm& g = p.g;
  if (!columns_fit(caps, p, plan.push))  // (only a weight in blocks of more than kSmallM rows gets here so)
    throw Error("gemm: the decode-step kernel of " + device(caps) + " reads A's rows in 16-byte units: K, lda and " +
                "A's offsets must be multiples of " + std::to_string(16 / dtype_bytes(p.dtype)));
  const bool b_texels = b_as_texels(caps, p);
  // Rows: one variant for 1, for 2, then for each power of two up to kColumnsMaxM (the
  // kernel skips rows past M), so that prompts of every length share a few pipelines.
  uint32_t rows = g.M;
  if (rows > 2) rows = std::min(std::bit_ceil(rows), kColumnsMaxM);
  // Four sums an invocation on the decode step over blocks (four columns, or a gated
  // product's two with their ups), so that A's work a block is shared by more columns;
  // eight spilled on lavapipe, and past two rows each column's block is dequantized
  // into registers, so two columns there (docs/performance.md). Workgroups of 64
  // invocations, fewer where N would leave a core without work.
  const uint32_t cols = g.b_blocks && rows <= 2 && !g.glu ? 4 : 2, sg = caps.subgroup_size;
  uint32_t wg = 64;
  while (wg > sg && (g.N + wg * cols - 1) / (wg * cols) < 8) wg /= 2;
  plan.shader = "gemm_columns.comp";
  plan.bindings = GemmBindings::Plain;
  plan.defines = {{"WG_SIZE", std::to_string(wg)}, {"ROWS", std::to_string(rows)}, {"COLS", std::to_string(cols)},
                  {"SG", std::to_string(sg)}};
  if (g.glu) plan.defines.emplace_back("GLU", "1");
  if (g.b_blocks) {
    for (auto& q : block_defines(*g.b_blocks, caps)) plan.defines.push_back(q);
    if (b_texels) plan.defines.emplace_back("TEXEL_B", "1");
    // An invocation's two columns are rows 2i and 2i + 1: with N even and rows interleaved
    // in even groups, their blocks are neighbours in memory and share a top-bits unit
    // (read so on the decode step: one or two rows).
    const bool top_bits = std::any_of(plan.defines.begin(), plan.defines.end(),
                                      [](const auto& d) { return d.first == "Q_HIGH_BIT" || d.first == "Q_HIGH_PAIRS"; });
    if (top_bits && rows <= 2 && cols % 2 == 0 && g.N % 2 == 0 && ops::block_interleave(caps) % 2 == 0)
      plan.defines.emplace_back("PAIRED_ROWS", "1");
  }
  // A as texels too where its view holds them: each lane loads its own unit of A, and
  // llvmpipe fetches texels lane by lane more cheaply than it gathers from a storage
  // buffer (docs/performance.md, "On the AMD EPYC again").
  const bool a_texels = b_texels && whole_texels(caps, p.a);
  if (a_texels) plan.defines.emplace_back("TEXEL_A", "1");
  plan.texels = {a_texels ? TexelFormat::Rgba32Ui : TexelFormat::None, b_texels ? TexelFormat::Rgba32Ui : TexelFormat::None};
  plan.variant = g.b_blocks ? std::string("columns ") + block_type_name(*g.b_blocks) : "columns";
  plan.label = "gemm_" + plan.variant;
  plan.groups = {(g.N + wg * cols - 1) / (wg * cols), (g.M + rows - 1) / rows, g.batch * g.heads};
}

// Decode steps (at most kSmallM rows): the small-M kernel, streaming the weights once.
void plan_small_m(const Capabilities& caps, const GemmProblem& p, GemmPlan& plan) {
  const Gemm& g = p.g;
  const uint32_t batches = g.batch * g.heads;
  plan.shader = "gemm_small_m.comp";
  plan.bindings = p.out_norm ? GemmBindings::Normed : GemmBindings::Folded;  // it binds the fold's weights always
  if (g.b_blocks) {
    plan_small_m_blocks(caps, p, plan);
    return;
  }
  if (!small_m_subgroups(caps, g)) {
    if (g.address_weights == true)
      throw Error("gemm: A and B cannot be read through buffer addresses on " + device(caps) +
                  " (the small-M kernel's address path needs subgroup arithmetic)");
    if (g.texel_weights == true)
      throw Error("gemm: B cannot be read as texels on " + device(caps) +
                  " (the small-M kernel's texel path needs subgroup arithmetic)");
    const uint32_t wg = std::min<uint32_t>(256, caps.max_workgroup_invocations);
    const uint32_t lanes = std::min<uint32_t>(32, wg);
    plan.defines = {{"WG_SIZE", std::to_string(wg)}, {"LANES", std::to_string(lanes)}};
    if (g.norm_of != NormOf::None) plan.defines.emplace_back("NORM_FOLDED", "1");
    const uint32_t cols = g.trans_b ? wg / lanes : wg;
    plan.groups = {(g.N + cols - 1) / cols, 1, batches};
    plan.variant = "small_m";
    plan.label = "gemm_small_m";
    return;
  }
  // One row (batch-1 decoding) as a variant of its own, whose loops run that row alone
  // (faster on lavapipe); 2 to 4 rows share one, so a warm-up that runs one beam search
  // has compiled every decode step. On CPU drivers, 8 columns a subgroup where K >= 2048
  // (one load of A's texel per 8 of B's), else 4: each measured the faster there
  // (docs/performance.md).
  const uint32_t wg = std::max<uint32_t>(64, caps.subgroup_size);
  // (at most the subgroup's lanes: each column's sum is stored by the lane of its index)
  const uint32_t cols = std::min<uint32_t>(caps.type == DeviceType::Cpu && g.K >= 2048 ? 8 : 4, caps.subgroup_size);
  const bool vec4 = rows_on_vectors(p, plan.push, 4);
  Defines& d = plan.defines;
  d = {{"SUBGROUP_REDUCE", "1"}, {"WG_SIZE", std::to_string(wg)}, {"COLS", std::to_string(cols)}};
  if (g.M == 1) d.emplace_back("ROWS", "1");
  if (vec4) d.emplace_back("VEC4_K", "1");
  if (g.norm_of != NormOf::None) d.emplace_back("NORM_FOLDED", "1");
  if (p.out_norm) d.emplace_back("NORM_OUT", "1");
  bool addresses = vec4 && small_m_addresses(caps, g, p.dtype, p.a, p.b);
  if (g.address_weights == true && !addresses) throw Error("gemm: A and B cannot be read through buffer addresses");
  if (addresses && (p.a.address | p.b.address) % 16) {  // blocks' buffers start aligned on every driver seen; never assumed
    if (g.address_weights == true)
      throw Error("gemm: A or B lies at a buffer address that is not 16-byte aligned on " + device(caps));
    addresses = false;
  }
  if (addresses) {
    plan.push.address_a[0] = uint32_t(p.a.address), plan.push.address_a[1] = uint32_t(p.a.address >> 32);
    plan.push.address_b[0] = uint32_t(p.b.address), plan.push.address_b[1] = uint32_t(p.b.address >> 32);
  }
  const bool texels = vec4 && !addresses && small_m_texels(caps, g, p.dtype, p.a, p.b);
  if (g.texel_weights == true && !texels) throw Error("gemm: A and B cannot be read as texels");
  if (texels || addresses) d.emplace_back("TEXEL_B", "1");  // the loop over 16-byte units
  if (addresses) d.emplace_back("ADDRESS_AB", "1");       // ... read through addresses
  const TexelFormat f = p.dtype == DType::F16 ? TexelFormat::Rgba32Ui : TexelFormat::Rgba32F;
  if (texels) plan.texels = {f, f};
  plan.variant = addresses ? "small_m addresses" : texels ? "small_m texels" : "small_m";
  plan.label = "gemm_" + plan.variant + (p.out_norm ? " normed" : "");
  const uint32_t per_group = wg / caps.subgroup_size * (g.glu ? cols / 2 : cols);  // outputs
  plan.groups = {(g.N + per_group - 1) / per_group, 1, batches};
}

// Larger products: the tiled, direct or cooperative-matrix kernel with the planned tiles.
void plan_tiles(const Capabilities& caps, const Policy& policy, const GemmTuning* tuning, const GemmProblem& p,
                GemmPlan& plan) {
  const Gemm& g = p.g;
  const uint32_t batches = g.batch * g.heads;
  GemmTiles t = planned_gemm_tiles(caps, policy, tuning, g, p.dtype);
  const bool folded = g.norm_of != NormOf::None;
  if (g.glu) {
    // Tiles that cannot pair gates with ups give way to the default table's (which can:
    // every default TN is even); a product's own refuse.
    std::string problem = gemm_glu_problem(t);
    if (!problem.empty() && !g.tiles) problem = gemm_glu_problem(t = default_gemm_tiles(caps, g, p.dtype));
    if (!problem.empty()) throw Error("gemm: " + t.name() + " on " + device(caps) + ": " + problem);
  }
  if (folded) {
    // Tuned tiles that cannot hold the fold (the cooperative-matrix kernel, or too little
    // shared memory for the statistics) give way to the default table's; a product's own refuse.
    std::string problem = gemm_norm_fold_problem(caps, t);
    if (!problem.empty() && !g.tiles) problem = gemm_norm_fold_problem(caps, t = default_gemm_tiles(caps, g, p.dtype));
    if (!problem.empty()) throw Error("gemm: " + t.name() + " on " + device(caps) + ": " + problem);
  }
  // vec4 global loads when every row and batch of A and B starts 16-byte aligned.
  const bool vec4_nt = !g.trans_a && g.trans_b && rows_on_vectors(p, plan.push, 4);
  // Row statistics: read where given and this kernel can, written where asked and it can
  // (the fold's variant, with ROW_STATS, runs both, its norm flags off when unused).
  const bool write_stats = p.stats_out && !g.split.column && !g.glu;  // a split C: no whole rows
  const bool row_stats = direct_row_stats(caps, t) && g.batch == 1 && g.heads == 1 && !p.step &&
                         ((p.stats_in_parts && folded) || write_stats);
  if (row_stats) {
    if (p.stats_in_parts) {
      plan.push.flags |= GEMM_FLAG_STATS_IN;
      plan.push.stats_parts = *p.stats_in_parts;
    }
    if (write_stats) {
      plan.push.flags |= GEMM_FLAG_STATS_OUT;
      plan.stats_parts_out = (g.N + t.bn - 1) / t.bn * (t.invocations() / caps.subgroup_size);
    }
  }
  Defines& d = plan.defines;
  if (vec4_nt) d.emplace_back("VEC4_NT", "1");
  if (folded || row_stats) {
    d.emplace_back("NORM_FOLDED", "1");
    if (t.strategy == GemmStrategy::Direct && direct_gemm_shuffles(caps, t) && caps.subgroup_arithmetic) {
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
  plan.bindings = row_stats ? GemmBindings::RowStats : folded ? GemmBindings::Folded : GemmBindings::Plain;
  // Split-K where the tiles ask for it (never with a fold: gemm_norm_fold_problem), and
  // one pass where K is a single BK step or the partials would not fit one binding or the
  // grid. Always the tiles' slice count, one pipeline per design: where K has fewer BK
  // steps, the last slices sum nothing and write zeros.
  if (t.split_k > 1 && !folded && !row_stats && g.K > t.bk) {
    const uint64_t partial_bytes = uint64_t(batches) * t.split_k * g.M * g.N * 4;
    if (partial_bytes <= caps.max_storage_buffer_range && uint64_t(batches) * t.split_k <= caps.max_workgroup_count[2]) {
      plan.split_k = t.split_k;
      plan.partial_bytes = partial_bytes;
      d.emplace_back("SPLIT_K", std::to_string(t.split_k));
    }
  }
  if (g.address_weights == true)
    throw Error("gemm: A and B are read through buffer addresses only by the decode-step kernel (at most " +
                std::to_string(kSmallM) + " rows), not by " + t.name());
  if (g.texel_weights == true && t.strategy != GemmStrategy::Direct)
    throw Error("gemm: A and B cannot be read as texels by " + t.name() + " (only the direct and decode-step kernels can)");
  // Prefetch where the tiles ask for it and A's and B's rows are vec4s (else the same
  // tiles without it).
  const bool prefetch = t.prefetch && vec4_nt;
  std::string texel_label;
  if (g.b_blocks && (g.trans_a || !g.trans_b))  // (Ops::gemm dequantizes such a weight first)
    throw Error("gemm: B in " + std::string(block_type_name(*g.b_blocks)) + " blocks is read by " + t.name() +
                " as a Linear weight only");
  if (g.b_blocks && t.strategy != GemmStrategy::CoopMatNV && !vec4_nt)
    throw Error("gemm: with B in blocks, A's rows must start on whole vec4s (lda and A's offset multiples of 4)");
  if (t.strategy == GemmStrategy::CoopMatNV) {
    d.clear();  // its only defines (it never folds)
    if (plan.split_k > 1) d.emplace_back("SPLIT_K", std::to_string(plan.split_k));
    if (prefetch) d.emplace_back("PREFETCH", "1");
    // Wide staging where the rows are whole uvec4s of eight halves (else the design's
    // f16vec4 prefetch, which gemm_tiles_problem also sizes it for).
    // (B in blocks is dequantized a vec4 at a time: never wide)
    if (t.wide && prefetch && rows_on_vectors(p, plan.push, 8) && !g.b_blocks) d.emplace_back("WIDE", "1");
    if (t.prefetch) d.emplace_back("PREFETCH_LAYOUT", "1");  // the design's padded rows and epilogue, either way
    if (caps.cooperative_matrix_emulated) d.emplace_back("COOPMAT_EMULATED", "1");
    if (g.b_blocks)
      for (auto& q : block_defines(*g.b_blocks, caps)) d.push_back(q);
    plan.shader = "gemm_coopmat.comp";
    plan.bindings = GemmBindings::Plain;
    plan.spec = {t.invocations(), t.bm, t.bn, t.bk, t.tm, t.tn};
  } else if (t.strategy == GemmStrategy::Direct) {
    const bool shuffle = direct_gemm_shuffles(caps, t);
    if (shuffle) d.emplace_back("SHUFFLE_A", "1");
    const bool texels = direct_texels(caps, g, p.dtype, vec4_nt, p.a, p.b);
    if (texels) d.emplace_back("TEXEL_AB", "1");
    const TexelFormat f = p.dtype == DType::F16 ? TexelFormat::Rgba32Ui : TexelFormat::Rgba32F;
    plan.shader = "gemm_direct.comp";
    plan.spec = shuffle ? std::vector<uint32_t>{t.invocations(), t.tm, t.tn, caps.subgroup_size}
                        : std::vector<uint32_t>{t.invocations(), t.tm, t.tn};
    if (texels) plan.texels = {f, g.b_blocks ? TexelFormat::Rgba32Ui : f}, texel_label = " texels";
    if (g.b_blocks) {
      for (auto& q : block_defines(*g.b_blocks, caps)) d.push_back(q);
      texel_label = std::string(" ") + block_type_name(*g.b_blocks) + texel_label;
    }
  } else {
    if (prefetch) d.emplace_back("PREFETCH", "1");
    if (g.b_blocks)
      for (auto& q : block_defines(*g.b_blocks, caps)) d.push_back(q);
    plan.shader = "gemm.comp";
    plan.spec = {t.invocations(), t.bm, t.bn, t.bk, t.tm, t.tn};
  }
  const uint32_t outputs = g.glu ? t.bn / 2 : t.bn;  // a gated product's tile: its gates', then their ups'
  plan.groups = {(g.N + outputs - 1) / outputs, (g.M + t.bm - 1) / t.bm, batches};
  plan.variant = t.name() + (g.b_blocks ? std::string(" ") + block_type_name(*g.b_blocks) : "");
  plan.label = "gemm " + t.name() + texel_label + ",";
  if (plan.split_k > 1) {
    plan.reduce_defines = {{"SLICES", std::to_string(plan.split_k)}};
    plan.reduce_groups = {(g.N + 63) / 64, g.M, batches};
  }
}

}  // namespace

bool gemm_tiles_read_blocks(const Capabilities& caps, const Gemm& g, const GemmTiles& t) {
  if (!g.b_blocks || g.M <= kSmallM || !g.trans_b || g.trans_a) return false;
  // CPU drivers: the columns kernel takes what the direct kernel (or a product's own
  // tiles) does not.
  if (gemm_columns_take(caps, g))
    return (t.strategy == GemmStrategy::Direct || g.tiles) && (g.M > kColumnsMaxM || g.norm_of != NormOf::None);
  return true;
}

bool gemm_columns_take(const Capabilities& caps, const Gemm& g) {
  return caps.type == DeviceType::Cpu && caps.subgroup_basic && caps.subgroup_ballot &&
         caps.min_subgroup_size == caps.max_subgroup_size && caps.subgroup_size >= 8 && caps.subgroup_size <= 16 &&
         g.trans_b && !g.trans_a && g.norm_of == NormOf::None && g.b_blocks &&
         g.address_weights != true;
}

Gemm resolved_gemm(const Gemm& g0) {
  Gemm g = g0;
  if (g.M == 0 || g.N == 0 || g.K == 0 || g.batch == 0 || g.heads == 0)
    throw Error("gemm: M, N, K, batch and heads must be at least 1 (got M=" + std::to_string(g.M) +
                " N=" + std::to_string(g.N) + " K=" + std::to_string(g.K) + ")");
  if (!g.lda) g.lda = g.trans_a ? g.M : g.K;
  if (!g.ldb) g.ldb = g.trans_b ? g.K : g.N;
  if (!g.ldc) g.ldc = g.split.column && g.split.column < g.N ? g.split.column : g.N;
  if (!g.ldr) g.ldr = g.N;
  return g;
}

uint32_t gemm_row_stats_parts(const Capabilities& caps, const Gemm& g, const GemmTiles& t) {
  if (g.M <= kSmallM || g.batch != 1 || g.heads != 1 || g.split.column || g.trans_a) return 0;
  if (!direct_row_stats(caps, t)) return 0;
  return (g.N + t.bn - 1) / t.bn * (t.invocations() / caps.subgroup_size);
}

GemmPlan gemm_plan(const Capabilities& caps, const Policy& policy, const GemmTuning* tuning, const GemmProblem& p) {
  check(caps, p);
  GemmPlan plan;
  plan.push = push_of(p);
  // The CPU drivers' decode-step kernel where it takes the product and its views suit it
  // (a weight in blocks of more than kSmallM rows has no other kernel: refused by name).
  // Past its rows, a weight in blocks goes to the direct kernel where the tiles are its
  // (each block dequantized in registers for its TM rows), else the columns kernel in chunks.
  const bool direct_blocks =
      p.g.b_blocks && p.g.M > kSmallM &&
      gemm_tiles_read_blocks(caps, p.g, planned_gemm_tiles(caps, policy, tuning, p.g, p.dtype));
  if (gemm_columns_take(caps, p.g) && !p.out_norm && !direct_blocks &&
      (columns_fit(caps, p, plan.push) || (p.g.b_blocks && p.g.M > kSmallM)))
    plan_columns(caps, p, plan);
  else if (p.g.M <= kSmallM) plan_small_m(caps, p, plan);
  else plan_tiles(caps, policy, tuning, p, plan);
  plan.label += " " + std::to_string(p.g.M) + "x" + std::to_string(p.g.N) + "x" + std::to_string(p.g.K);
  return plan;
}

}  // namespace vkf::ops
