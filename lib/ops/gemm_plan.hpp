#pragma once
// Which kernel runs a GEMM, and how: a pure function of the device's capabilities, the
// context's policy, its tuning file and the product with where its operands lie
// (gemm_plan). Nothing here records or touches a device, so every choice is tested
// without one (tests/ops/gemm_plan_test.cpp); Ops::gemm checks the views, plans, and
// records what the plan says.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gemm_operands.hpp"
#include "vkformer/capabilities.hpp"
#include "vkformer/gemm_tuning.hpp"
#include "vkformer/kernel.hpp"
#include "vkformer/ops.hpp"
#include "vkformer/policy.hpp"

namespace vkf::ops {

// The push constants of every GEMM kernel (shaders/gemm_common.glsl's Push).
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

// A product as the plan sees it: the Gemm (leading dimensions resolved: resolved_gemm),
// its storage type, where A, B, C, the residual and the split output lie, and which of
// the optional operands are given.
struct GemmProblem {
  Gemm g;
  DType dtype = DType::F32;
  GemmOperand a, b, c, residual, split_out;
  bool bias = false, residual_given = false, step = false, split_given = false, norm = false;
  std::optional<uint32_t> stats_in_parts;  // row statistics read (GemmRowStats::in)
  bool stats_out = false;                  // room for row statistics written (GemmRowStats::out)
  bool out_norm = false;                   // gemm_normed's norm in the same dispatch (NORM_OUT)
};

// The bindings a plan's kernel takes, in order: A, B, C, bias, residual, decode-step
// state, split output (Plain), then the folded norm's gamma and beta (Folded), and then
// the tickets (Normed: gemm_normed) or the row statistics in and out (RowStats).
enum class GemmBindings : uint32_t { Plain = 7, Folded = 9, Normed = 10, RowStats = 11 };

struct GemmPlan {
  // The kernel: its shader, its own defines (Ops adds the storage type's and unrolling),
  // specialisation constants and texel formats; bindings as above.
  std::string shader;
  Defines defines;
  std::vector<uint32_t> spec;
  std::vector<TexelFormat> texels;
  GemmBindings bindings = GemmBindings::Plain;
  Groups groups;
  GemmPush push{};
  std::string variant;  // what Ops::gemm_variant reports: "small_m", "small_m texels", or the tiles' name
  std::string label;    // the dispatch's name in profiles
  // Split-K: the kernel writes `split_k` slices of fp32 partial sums ([batch][slice][M][N],
  // partial_bytes) to a buffer of the recording's own, then gemm_split_k_reduce.comp
  // (reduce_defines, reduce_groups) adds them and applies the epilogue. 1: one pass.
  uint32_t split_k = 1;
  uint64_t partial_bytes = 0;
  Defines reduce_defines;
  Groups reduce_groups;
  std::optional<uint32_t> stats_parts_out;  // row statistics written, per row
};

// `g` with its leading dimensions filled in (0: packed) and its sizes checked (an Error
// for a zero size).
Gemm resolved_gemm(const Gemm& g);

// The tiles a product of more than kMaxFoldedNormRows rows runs: the product's own
// (Gemm::tiles), else the policy's, else the tuning file's for its row class, else the
// built-in table's for this card (tuned_device_tiles), else the default table's. Each
// checked against the device: an Error names what is wrong.
GemmTiles planned_gemm_tiles(const Capabilities& caps, const Policy& policy, const GemmTuning* tuning, const Gemm& g,
                             DType dtype);
GemmTiles default_gemm_tiles(const Capabilities& caps, const Gemm& g, DType dtype);

// Rows of B per slice where a Linear weight is larger than one binding may hold (a 50k-
// token output projection in fp32 on a device that binds 128 MiB): the product then runs
// as slices of B's rows, each a column range of C; nullopt where one product serves (a
// gated product never slices: its plan refuses a weight past one binding).
std::optional<uint32_t> gemm_weight_slice_rows(const Capabilities& caps, const Gemm& g, DType dtype, uint64_t b_bytes,
                                               bool step);

// The plan, or an Error naming what this device cannot run for `p`.
GemmPlan gemm_plan(const Capabilities& caps, const Policy& policy, const GemmTuning* tuning, const GemmProblem& p);

// Whether the CPU drivers' decode-step kernel (gemm_columns.comp) takes a product of this
// shape: then it reads a weight in blocks itself, at every row count it serves.
bool gemm_columns_take(const Capabilities& caps, const Gemm& g);

// Whether the tiles' kernel (tiled, direct or cooperative-matrix) reads a weight in blocks
// itself, a prompt's product past the decode-step kernel's rows: B a Linear weight, and
// on CPU drivers the direct kernel (or a product's own tiles, Gemm::tiles) past the
// columns kernel's rows or with a folded norm.
bool gemm_tiles_read_blocks(const Capabilities& caps, const Gemm& g, const GemmTiles& t);

// Partials per row the direct kernel writes as row statistics for `g` with these tiles
// (0 where it writes none).
uint32_t gemm_row_stats_parts(const Capabilities& caps, const Gemm& g, const GemmTiles& t);

}  // namespace vkf::ops
