#pragma once
// GEMM kernel variants and their tuning on the user's own device (CLBlast's and Arm
// Compute Library's answer to "no team owns every GPU"): the tiled kernel's tile
// parameters as data, their validity computed from the device's limits, a per-device
// tuning file that `vkformer tune` writes after verifying every candidate against a
// double-precision reference and timing it, and that gemm() reads. Without a tuning file
// gemm() uses the per-device-class default table (lib/ops/gemm_default_table.cpp).
#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "vkformer/context.hpp"
#include "vkformer/ops.hpp"

namespace vkf {

// Row classes of the tiled kernel (products of more than Ops' small-M limit): at most
// 64 rows, at most 256, more. Each gets its own tiles, default or tuned.
constexpr std::array<uint32_t, 3> kGemmRowClassLimits = {64, 256, UINT32_MAX};
constexpr uint32_t kGemmMaxSplitK = 16;  // GemmTiles::split_k's largest
uint32_t gemm_row_class(uint32_t rows);
std::string gemm_row_class_name(uint32_t row_class);  // "M <= 64", "M <= 256", "M > 256"

// The tiles `vkformer tune` chose on a card we have run on (CLBlast's database habit),
// for the row class of `rows`, where the card and precision are in the table and the
// tiles are valid on this device as it is (not under the portable profile's clamps);
// else nullopt. Between a tuning file and the default table: a user's own tune wins.
std::optional<GemmTiles> tuned_device_tiles(const Capabilities& caps, DType precision, uint32_t rows);

// "" when the tiled kernel can run these tiles on the device (BK a multiple of 4, TM
// dividing BM and TN dividing BN, within the workgroup and shared-memory limits); else
// what is wrong with them.
// `precision` is the storage precision (the cooperative-matrix kernel runs fp16 only).
std::string gemm_tiles_problem(const Capabilities& caps, const GemmTiles& tiles, DType precision);

// The candidates the tuner tries, each valid on the device: designed per device class
// (short wide tiles for CPU drivers; 64-128 blocks with 4x4 to 8x8 per invocation for
// GPUs; small tiles within mobile limits), whatever the class, filtered by validity.
std::vector<GemmTiles> gemm_tile_candidates(const Capabilities& caps, DType precision);
// "" when these tiles can also run a product with a folded LayerNorm (Gemm::norm_of):
// not the cooperative-matrix kernel, and its rows' statistics in shared memory beside
// the tiles; else why not. gemm() then runs the default table's tiles, or, for
// Gemm::tiles, refuses.
std::string gemm_norm_fold_problem(const Capabilities& caps, const GemmTiles& tiles);
// "" when these tiles can also run a gated product (Gemm::glu): not the
// cooperative-matrix kernel, no split-K, an even TN (an invocation's columns pair a
// gate with its up); else why not. gemm() then runs the default table's tiles, or, for
// Gemm::tiles, refuses.
std::string gemm_glu_problem(const GemmTiles& tiles);
// The fold's statistics: rows per workgroup and slices per row (gemm_norm_rows.glsl).
struct GemmNormRows {
  uint32_t rows = 0, parts = 0;
};
GemmNormRows gemm_norm_rows(const GemmTiles& tiles);
std::vector<GemmTiles> gemm_tile_designs();  // every design, valid here or not
// The designs that cannot run on the device in this precision, each with the reason.
std::vector<std::pair<GemmTiles, std::string>> gemm_designs_not_valid(const Capabilities& caps, DType precision);

// Why an attention kernel cannot run on `caps` for head_dim at `precision`, or "" if it
// can (limits, shared memory, subgroup features; the portable profile's clamps).
std::string attention_kernel_problem(const Capabilities& caps, AttentionKernel kernel, uint32_t head_dim,
                                     DType precision);

// Query-length classes of the fused attention: at most 64 queries, at most 256, more.
constexpr std::array<uint32_t, 3> kAttentionLengthClassLimits = {64, 256, UINT32_MAX};
uint32_t attention_length_class(uint32_t q_len);
std::string attention_length_class_name(uint32_t length_class);  // "L <= 64", ...

// Tuned tiles per row class and attention kernel per query-length class (none: the
// default table's).
struct GemmTuning {
  std::array<std::optional<GemmTiles>, 3> tiles;
  std::array<std::optional<AttentionKernel>, 3> attention;
};

// The tuning file's text: JSON naming its schema and `identity` (what it was made for),
// the tiles per row class, and a checksum of them. parse_gemm_tuning takes it as
// untrusted input: anything larger than 64 KiB, not JSON, made for another identity,
// with a bad checksum or with tiles invalid on `caps` gives nullopt and the reason.
std::string format_gemm_tuning(const std::string& identity, const GemmTuning& tuning);
std::optional<GemmTuning> parse_gemm_tuning(const std::string& text, const std::string& identity,
                                            const Capabilities& caps, DType precision, std::string* why = nullptr);
std::string gemm_tuning_file_id(const std::string& identity);  // the hash in the file's name

// The tuning file of this device and precision: <cache dir>/gemm-tuning-<hash>.json,
// named and headed by the device, its driver, the limits in force (so the portable
// profile has its own), vkformer's version and the precision. Empty when the disk cache
// is off.
std::string gemm_tuning_path(const Context& ctx, DType precision);
// Reads it as untrusted input: a missing file is no tuning; a file too large, not JSON,
// for another device or version, with a bad checksum or with tiles invalid here is
// ignored with a warning through the context's log.
std::optional<GemmTuning> load_gemm_tuning(const Context& ctx, DType precision);
void save_gemm_tuning(const Context& ctx, DType precision, const GemmTuning& tuning);  // throws vkf::Error

// Runs `tiles` on random inputs of M x N x K (C = A B^T) and compares every output with
// a double-precision reference on the host. The error is |c - ref| / (sum_k |a_k b_k|),
// the largest over C, which fp32 accumulation keeps below ~K * 2^-24 and the tuner
// requires below 1e-5 (fp16 storage: plus 2^-10 of |ref|, the stored result's rounding).
// `tamper`, for tests, alters the candidate's output before the comparison. With
// `blocks`, B is a weight in those blocks (K whole blocks), which the tiles' kernel reads
// itself past the decode-step kernels' rows; the reference takes it dequantized.
struct GemmCheck {
  bool ok = false;
  double error = 0;  // the largest error as above; for fp16, after the rounding allowance
};
GemmCheck check_gemm_tiles(Context& ctx, DType precision, uint32_t M, uint32_t N, uint32_t K, const GemmTiles& tiles,
                           uint64_t seed, const std::function<void(std::vector<float>&)>& tamper = {},
                           std::optional<BlockType> blocks = std::nullopt);

// The tuner. Per row class (one product each, GemmTuneOptions::shapes), every candidate
// valid here is verified with check_gemm_tiles at awkward shapes of the class (one that
// fails is rejected and reported, never used), then timed beside the default table's
// choice (medians of whole submits of many products); the fastest, when it is faster by
// min_speedup_ratio again in three alternating rounds, goes to the device's tuning file
// (save), which gemm() reads from then on in every process. The budget is shared out
// between the classes; candidates left when a class's share is spent are not tried
// (Class::out_of_time). Classes of at most Ops::kMaxFoldedNormRows rows run the
// small-M kernel and are not tuned. Throws vkf::Error when the disk cache is off.
struct GemmTuneOptions {
  DType precision = DType::F32;
  double budget_s = 120;
  std::vector<Gemm> shapes;              // empty: gemm_tuning_shapes(512, 2048) (Transformer-base)
  double seconds_per_timing = 0.15;      // each timing's least duration
  double min_speedup_ratio = 0.95;       // a winner takes at most this much of the default's time
  bool save = true;                      // write the tuning file
  uint64_t seed = 1;                     // the verification's random inputs
  std::function<void(const std::string&)> progress;  // a line per class and candidate, as they finish
  // For tests: alters a candidate's output before its verification (a deliberately wrong
  // candidate, which the tuner must reject and never choose).
  std::function<void(const GemmTiles&, std::vector<float>&)> tamper;
  // The fused attention kernels, per query-length class: self-attention of this many
  // heads of head_dim (causal, batch 1) at each length (empty: 24, 256 and 1024).
  uint32_t attention_heads = 8, attention_head_dim = 64;
  std::vector<uint32_t> attention_lengths;
  std::function<void(AttentionKernel, std::vector<float>&)> tamper_attention;  // as tamper
};
struct GemmTuneReport {
  struct Candidate {
    GemmTiles tiles;
    bool verified = false;
    double error = 0;    // as GemmCheck::error
    double seconds = 0;  // per product, when verified
  };
  struct Class {
    uint32_t row_class = 0;
    Gemm shape;
    GemmTiles fallback, chosen;  // the default table's and the one kept
    double default_seconds = 0, speedup = 1;
    bool out_of_time = false;
    std::vector<Candidate> candidates;
  };
  std::vector<GemmTiles> candidates;                            // valid here
  std::vector<std::pair<GemmTiles, std::string>> not_valid;     // designs that cannot run here, and why
  std::vector<Class> classes;
  struct AttentionCandidate {
    AttentionKernel kernel = AttentionKernel::Rows;
    bool verified = false;
    double error = 0;    // as AttentionCheck::error
    double seconds = 0;  // per attention, when verified
  };
  struct AttentionClass {
    uint32_t length_class = 0, q_len = 0;
    AttentionKernel fallback = AttentionKernel::Rows, chosen = AttentionKernel::Rows;
    double default_seconds = 0, speedup = 1;
    bool out_of_time = false;
    std::vector<AttentionCandidate> candidates;
  };
  std::vector<AttentionClass> attention;
  std::string file;  // the tuning file written ("" without save)
  double seconds = 0;
};
// Runs the fused attention `kernel` on random inputs (2 sequences, 4 query heads over 2
// K/V heads of head_dim, 19 causal queries after 18 cached keys, the second sequence's
// last keys padded out) and compares every output with a double-precision reference on
// the host. The error is |o - ref| / (sum_j p_j |v_j|), the largest over O; the tuner
// requires it below 2e-5 in fp32 (an online softmax over 37 keys) and, for fp16 storage,
// after 2^-10 of |ref| for the stored result's rounding.
struct AttentionCheck {
  bool ok = false;
  double error = 0;
};
AttentionCheck check_attention_kernel(Context& ctx, DType precision, AttentionKernel kernel, uint32_t head_dim,
                                      uint64_t seed, const std::function<void(std::vector<float>&)>& tamper = {});

// A transformer's products, one per row class: 24 and 256 rows by the FFN's
// [d_ffn, d_model] weight, 1024 rows by a [d_model, d_model] one.
std::vector<Gemm> gemm_tuning_shapes(uint32_t d_model, uint32_t d_ffn);
// The attention lengths the tuner times for a model of at most max_position positions:
// 24, 256 and 1024 where they fit (else max_position).
std::vector<uint32_t> attention_tuning_lengths(uint32_t max_position);
GemmTuneReport tune_gemm(Context& ctx, const GemmTuneOptions& options);

}  // namespace vkf
