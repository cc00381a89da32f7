// The GEMM tuner (include/vkformer/gemm_tuning.hpp: tune_gemm): every variant valid on
// the device, verified against a double-precision reference and timed beside the
// default table's choice on one product per row class; the winners go to the device's
// tuning file, which gemm() reads from then on. `vkformer tune` prints it; a session's
// warmup runs it within a game's loading-screen budget.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <span>
#include <vector>

#include "gemm_flags.h"  // shaders/: GEMM_COLUMNS_MAX_M
#include "gemm_tiles.hpp"
#include "vkformer/gemm_tuning.hpp"
#include "vkformer/tensor_io.hpp"

namespace vkf {

namespace {

using clock_type = std::chrono::steady_clock;

double since(clock_type::time_point t) { return std::chrono::duration<double>(clock_type::now() - t).count(); }

// Seconds per run of `reps` recorded in `cl`: submitted once to warm (pipelines compiled,
// caches filled), then until `min_seconds` have passed and at least three times, the
// median over reps (a submit's cost shared by many). Submits wait by blocking, never
// spinning, which would starve a CPU driver.
double time_submits(CommandList& cl, uint32_t reps, double min_seconds) {
  cl.submit();
  std::vector<double> t;
  const auto start = clock_type::now();
  while (t.size() < 3 || (since(start) < min_seconds && t.size() < 50)) {
    const auto t0 = clock_type::now();
    cl.submit();
    t.push_back(since(t0));
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2] / reps;
}

// Seconds per product of `g`.
double time_product(Context& ctx, Ops& ops, const Gemm& g, const Buffer& a, const Buffer& b, const Buffer& c,
                    double min_seconds) {
  const uint32_t reps = uint32_t(std::clamp(2e8 / (2.0 * g.M * g.N * g.K), 1.0, 50.0));
  CommandList cl = ctx.command_list();
  for (uint32_t r = 0; r < reps; ++r) ops.gemm(cl, g, {.a = a.view(), .b = b.view(), .c = c.view()});
  return time_submits(cl, reps, min_seconds);
}

// Seconds per self-attention of `a` over q (as queries, keys and values) into o.
double time_attention(Context& ctx, Ops& ops, const Attention& a, const Buffer& q, const Buffer& o,
                      double min_seconds) {
  const double work = 4.0 * a.heads * a.q_len * a.kv_len * a.head_dim;
  const uint32_t reps = uint32_t(std::clamp(2e8 / work, 1.0, 50.0));
  CommandList cl = ctx.command_list();
  for (uint32_t r = 0; r < reps; ++r) ops.attention(cl, a, q.view(), q.view(), q.view(), o.view());
  return time_submits(cl, reps, min_seconds);
}

}  // namespace

std::vector<Gemm> gemm_tuning_shapes(uint32_t d_model, uint32_t d_ffn) {
  // One product per row class as a transformer runs them: a short source by the FFN's
  // up-projection, a long batch by it, and many rows by a square projection.
  return {{.M = 24, .N = d_ffn, .K = d_model, .trans_b = true},
          {.M = 256, .N = d_ffn, .K = d_model, .trans_b = true},
          {.M = 1024, .N = d_model, .K = d_model, .trans_b = true}};
}

std::vector<uint32_t> attention_tuning_lengths(uint32_t max_position) {
  std::vector<uint32_t> lengths;
  for (uint32_t L : {24u, 256u, 1024u})
    if (L <= max_position) lengths.push_back(L);
  if (lengths.empty() && max_position) lengths.push_back(max_position);
  return lengths;
}

GemmTuneReport tune_gemm(Context& ctx, const GemmTuneOptions& o) {
  const Capabilities& caps = ctx.capabilities();
  if (!(o.budget_s > 0)) throw Error("tune: the budget must be a positive number of seconds");
  if (ctx.cache_dir().empty()) throw Error("the disk cache is off: a tuning file has nowhere to go");
  const std::vector<Gemm> shapes = o.shapes.empty() ? gemm_tuning_shapes(512, 2048) : o.shapes;
  const std::vector<uint32_t> lengths = o.attention_lengths.empty() ? std::vector<uint32_t>{24, 256, 1024}
                                                                     : o.attention_lengths;
  if (!o.attention_heads || o.attention_heads > 256 || !o.attention_head_dim ||
      o.attention_head_dim > Ops::kMaxFusedHeadDim)
    throw Error("tune: attention heads must be 1..256 and head_dim 1.." + std::to_string(Ops::kMaxFusedHeadDim));
  for (uint32_t L : lengths)
    if (!L || L > 8192) throw Error("tune: an attention length is 0 or more than 8192");
  const size_t steps = shapes.size() + lengths.size();  // the budget's shares
  for (const Gemm& s : shapes)
    if (!s.M || !s.N || !s.K || uint64_t(s.M) * s.K > (64u << 20) || uint64_t(s.N) * s.K > (64u << 20))
      throw Error("tune: a shape is empty or larger than 2^26 elements per operand");
  const auto started = clock_type::now();
  auto left = [&] { return o.budget_s - since(started); };
  auto event = [&](const std::string& line) {
    if (o.progress) o.progress(line);
  };
  Ops ops(ctx, o.precision);
  GemmTuneReport report;
  report.candidates = gemm_tile_candidates(caps, o.precision);
  report.not_valid = gemm_designs_not_valid(caps, o.precision);

  // Each class's tuning starts from the existing file's, so a quick tune of one class
  // keeps what an earlier, longer one found for the others.
  GemmTuning tuning = load_gemm_tuning(ctx, o.precision).value_or(GemmTuning{});
  uint64_t seed = o.seed;
  for (size_t si = 0; si < shapes.size(); ++si) {
    const Gemm& shape = shapes[si];
    const uint32_t row_class = gemm_row_class(shape.M);
    if (row_class >= tuning.tiles.size() || shape.M <= Ops::kMaxFoldedNormRows) continue;  // the small-M kernel
    const double share = std::max(0.0, left() / double(steps - si));  // this class's time
    const auto class_started = clock_type::now();
    auto class_left = [&] { return share - since(class_started); };
    GemmTuneReport::Class cls;
    cls.row_class = row_class;
    cls.shape = shape;
    std::vector<float> fill(uint64_t(std::max(shape.M, shape.N)) * shape.K);
    for (size_t i = 0; i < fill.size(); ++i) fill[i] = float((i * 7919) % 1000) / 1000.0f - 0.5f;
    Buffer a = upload_floats(ctx, std::span<const float>(fill).first(uint64_t(shape.M) * shape.K), o.precision, "A");
    Buffer b = upload_floats(ctx, std::span<const float>(fill).first(uint64_t(shape.N) * shape.K), o.precision, "B");
    Buffer c = ctx.buffer(uint64_t(shape.M) * shape.N * dtype_bytes(o.precision), "C");
    cls.fallback = ops.default_gemm_tiles(shape);
    Gemm g = shape;
    g.tiles = cls.fallback;
    double base = time_product(ctx, ops, g, a, b, c, o.seconds_per_timing);
    cls.default_seconds = base;
    if (o.progress) {
      char line[160];
      std::snprintf(line, sizeof line, "\n%s (timed at %ux%ux%u): default %s, %.1f us", gemm_row_class_name(row_class).c_str(),
                    shape.M, shape.N, shape.K, cls.fallback.name().c_str(), base * 1e6);
      event(line);
    }
    GemmTiles best = cls.fallback;
    double best_time = base;
    for (const GemmTiles& t : report.candidates) {
      if (class_left() <= 0) {
        cls.out_of_time = true;
        break;
      }
      GemmTuneReport::Candidate cand{.tiles = t};
      // Verified first, on awkward shapes of the class (K a multiple of 4 and not, for the
      // vec4 and scalar loads; and over a weight in Q4_K blocks, which the same tiles read
      // in a quantized model's prompt), against the double reference.
      const uint32_t m = std::max<uint32_t>(shape.M - 1, Ops::kMaxFoldedNormRows + 1);
      std::function<void(std::vector<float>&)> tamper;
      if (o.tamper) tamper = [&](std::vector<float>& out) { o.tamper(t, out); };
      const GemmCheck v4 = check_gemm_tiles(ctx, o.precision, m, 131, 260, t, seed++, tamper);
      const GemmCheck v1 = v4.ok ? check_gemm_tiles(ctx, o.precision, m, 131, 259, t, seed++, tamper) : v4;
      const GemmCheck vq =
          v1.ok ? check_gemm_tiles(ctx, o.precision, std::max<uint32_t>(m, GEMM_COLUMNS_MAX_M + 1), 131, 512, t, seed++, tamper,
                                   BlockType::Q4_K)
                : v1;
      cand.verified = v4.ok && v1.ok && vq.ok;
      cand.error = std::max({v4.error, v1.error, vq.error});
      if (cand.verified) {
        g.tiles = t;
        cand.seconds = time_product(ctx, ops, g, a, b, c, o.seconds_per_timing);
        if (cand.seconds < best_time) best = t, best_time = cand.seconds;
      }
      cls.candidates.push_back(cand);
      if (o.progress) {
        char line[160];
        if (cand.verified)
          std::snprintf(line, sizeof line, "  %-28s verified (error %.2g), %10.1f us  %5.2fx", t.name().c_str(),
                        cand.error, cand.seconds * 1e6, base / cand.seconds);
        else
          std::snprintf(line, sizeof line, "  %-28s REJECTED: error %.3g of sum |a b| (the bound is 1e-5)",
                        t.name().c_str(), cand.error);
        event(line);
      }
    }
    // A winner must beat the default clearly, and again when the two are timed in turn
    // (three rounds, medians): one lucky timing on a busy machine is not a reason to change.
    if (!(best == cls.fallback) && best_time < o.min_speedup_ratio * base) {
      std::vector<double> mine, theirs;
      for (int round = 0; round < 3; ++round) {
        g.tiles = cls.fallback;
        theirs.push_back(time_product(ctx, ops, g, a, b, c, o.seconds_per_timing));
        g.tiles = best;
        mine.push_back(time_product(ctx, ops, g, a, b, c, o.seconds_per_timing));
      }
      std::sort(mine.begin(), mine.end());
      std::sort(theirs.begin(), theirs.end());
      base = theirs[1], best_time = mine[1];
    }
    if (!(best == cls.fallback) && best_time < o.min_speedup_ratio * base) {
      tuning.tiles[row_class] = best;
      cls.chosen = best;
      cls.speedup = base / best_time;
    } else {
      tuning.tiles[row_class] = std::nullopt;  // the default table's choice stands
      cls.chosen = cls.fallback;
      cls.speedup = 1.0;
    }
    if (o.progress) {
      char line[160];
      if (cls.speedup > 1.0)
        std::snprintf(line, sizeof line, "  -> %s, %.2fx the default (confirmed in three alternating rounds)",
                      cls.chosen.name().c_str(), cls.speedup);
      else
        std::snprintf(line, sizeof line, "  -> the default table's %s stands (nothing beat it by %.0f%%)",
                      cls.chosen.name().c_str(), (1 / o.min_speedup_ratio - 1) * 100);
      event(line);
    }
    report.classes.push_back(std::move(cls));
  }

  // Attention: every fused kernel valid here, verified, then timed beside the default
  // per query-length class, under the same rules as the GEMM's tiles.
  for (size_t li = 0; li < lengths.size(); ++li) {
    const uint32_t L = lengths[li];
    const uint32_t length_class = attention_length_class(L);
    const double share = std::max(0.0, left() / double(lengths.size() - li));
    const auto class_started = clock_type::now();
    auto class_left = [&] { return share - since(class_started); };
    GemmTuneReport::AttentionClass cls{.length_class = length_class, .q_len = L};
    Attention a{.heads = o.attention_heads, .head_dim = o.attention_head_dim, .q_len = L, .kv_len = L, .causal = true};
    const uint64_t elems = uint64_t(L) * a.heads * a.head_dim;
    std::vector<float> fill(elems);
    for (size_t i = 0; i < fill.size(); ++i) fill[i] = float((i * 7919) % 1000) / 1000.0f - 0.5f;
    Buffer q = upload_floats(ctx, fill, o.precision, "attention q");
    Buffer out = ctx.buffer(elems * dtype_bytes(o.precision), "attention o");
    cls.fallback = ops.default_attention_kernel(a);
    auto timed = [&](AttentionKernel k) {
      Attention ak = a;
      ak.kernel = k;
      return time_attention(ctx, ops, ak, q, out, o.seconds_per_timing);
    };
    double base = timed(cls.fallback);
    cls.default_seconds = base;
    if (o.progress) {
      char line[160];
      std::snprintf(line, sizeof line, "\nattention, %s (timed at %u causal queries, %u heads x %u): default %s, %.1f us",
                    attention_length_class_name(length_class).c_str(), L, a.heads, a.head_dim,
                    attention_kernel_name(cls.fallback), base * 1e6);
      event(line);
    }
    AttentionKernel best = cls.fallback;
    double best_time = base;
    for (AttentionKernel k : kAttentionKernels) {
      if (!attention_kernel_problem(caps, k, a.head_dim, o.precision).empty()) continue;
      if (class_left() <= 0) {
        cls.out_of_time = true;
        break;
      }
      GemmTuneReport::AttentionCandidate cand{.kernel = k};
      std::function<void(std::vector<float>&)> tamper;
      if (o.tamper_attention) tamper = [&](std::vector<float>& x) { o.tamper_attention(k, x); };
      const AttentionCheck check = check_attention_kernel(ctx, o.precision, k, a.head_dim, seed++, tamper);
      cand.verified = check.ok;
      cand.error = check.error;
      if (cand.verified) {
        cand.seconds = timed(k);
        if (cand.seconds < best_time) best = k, best_time = cand.seconds;
      }
      cls.candidates.push_back(cand);
      if (o.progress) {
        char line[160];
        if (cand.verified)
          std::snprintf(line, sizeof line, "  %-28s verified (error %.2g), %10.1f us  %5.2fx", attention_kernel_name(k),
                        cand.error, cand.seconds * 1e6, base / cand.seconds);
        else
          std::snprintf(line, sizeof line, "  %-28s REJECTED: error %.3g of sum p |v| (the bound is 2e-5)",
                        attention_kernel_name(k), cand.error);
        event(line);
      }
    }
    if (best != cls.fallback && best_time < o.min_speedup_ratio * base) {  // confirmed in alternating rounds
      std::vector<double> mine, theirs;
      for (int round = 0; round < 3; ++round) {
        theirs.push_back(timed(cls.fallback));
        mine.push_back(timed(best));
      }
      std::sort(mine.begin(), mine.end());
      std::sort(theirs.begin(), theirs.end());
      base = theirs[1], best_time = mine[1];
    }
    const bool better = best != cls.fallback && best_time < o.min_speedup_ratio * base;
    tuning.attention[length_class] = better ? std::optional(best) : std::nullopt;
    cls.chosen = better ? best : cls.fallback;
    cls.speedup = better ? base / best_time : 1.0;
    if (o.progress)
      event(better ? std::string("  -> ") + attention_kernel_name(best) + ", confirmed in three alternating rounds"
                   : std::string("  -> the default ") + attention_kernel_name(cls.fallback) + " stands");
    report.attention.push_back(std::move(cls));
  }
  if (o.save) {
    save_gemm_tuning(ctx, o.precision, tuning);
    report.file = gemm_tuning_path(ctx, o.precision);
  }
  report.seconds = since(started);
  return report;
}

}  // namespace vkf
