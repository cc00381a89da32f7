// The tiled GEMM's variants as data: names, row classes, validity from the device's
// limits, the tuner's candidates, and the tuning file's text, parsed as untrusted input
// (include/vkformer/gemm_tuning.hpp). No device is needed here, so the fuzz target
// (tests/fuzz/fuzz_tuning.cpp) links this file alone.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "bounded_json.hpp"
#include "vkformer/gemm_tuning.hpp"
#include "hash.hpp"

namespace vkf {

std::string GemmTiles::name() const {
  const char* kind = strategy == GemmStrategy::Direct      ? "direct "
                     : strategy == GemmStrategy::CoopMatNV ? "coopmat_nv "
                                                           : "tiled ";
  return std::string(kind) + std::to_string(bm) + "x" + std::to_string(bn) + "x" + std::to_string(bk) + "/" +
         std::to_string(tm) + "x" + std::to_string(tn) + (split_k > 1 ? " split " + std::to_string(split_k) : "") +
         (prefetch ? " prefetch" : "") + (wide ? " wide" : "");
}

uint32_t gemm_row_class(uint32_t rows) {
  uint32_t c = 0;
  while (rows > kGemmRowClassLimits[c]) ++c;
  return c;
}

std::string gemm_row_class_name(uint32_t row_class) {
  if (row_class + 1 < kGemmRowClassLimits.size()) return "M <= " + std::to_string(kGemmRowClassLimits[row_class]);
  return "M > " + std::to_string(kGemmRowClassLimits[row_class - 1]);
}

std::string gemm_tiles_problem(const Capabilities& caps, const GemmTiles& t, DType precision) {
  if (!t.bm || !t.bn || !t.bk || !t.tm || !t.tn) return "a tile size is 0";
  if (t.split_k < 1 || t.split_k > kGemmMaxSplitK)
    return "split-K runs 1 to " + std::to_string(kGemmMaxSplitK) + " slices, not " + std::to_string(t.split_k);
  if (t.split_k > 1 && t.strategy == GemmStrategy::Direct)
    return "the direct kernel (CPU drivers, which it fills already) has no split-K";
  if (t.bk % 4) return "BK " + std::to_string(t.bk) + " is not a multiple of 4 (the kernel reads k in vec4s)";
  if (t.bm % t.tm || t.bn % t.tn) return "TM must divide BM and TN divide BN";
  if (t.strategy == GemmStrategy::CoopMatNV) {
    const bool emulated = caps.cooperative_matrix_emulated;  // virtual subgroups of 32, no extension
    if (!caps.cooperative_matrix_nv && !emulated)
      return "the device offers no NV cooperative matrices with 16x16x16 fp16 products (VK_NV_cooperative_matrix, "
             "its feature, the Vulkan memory model and fp16 arithmetic and storage)";
    if (precision != DType::F16) return "the cooperative-matrix kernel multiplies fp16 inputs: fp16 storage only";
    if (!emulated &&
        (caps.min_subgroup_size != GemmTiles::kCoopMatSubgroup || caps.max_subgroup_size != GemmTiles::kCoopMatSubgroup))
      return "the cooperative-matrix kernel assumes subgroups of exactly 32 invocations";
    if (t.tm % 16 || t.tn % 16 || t.bk % 16) return "the cooperative-matrix kernel's TM, TN and BK are multiples of 16";
    if ((t.tm / 16) * (t.tn / 16) > 16) return "more than 16 accumulator matrices per subgroup";
  }
  if (t.prefetch && t.strategy == GemmStrategy::Direct)
    return "the direct kernel (no shared-memory tiles, each load used at once) has no prefetch";
  if (t.wide && (!t.prefetch || t.strategy != GemmStrategy::CoopMatNV))
    return "wide staging (eight halves a load) is a form of the cooperative-matrix prefetch designs'";
  // The f16vec4 rule holds for wide designs too: products whose rows are vec4s but not
  // uvec4s run their f16vec4 prefetch.
  if (t.prefetch && t.strategy == GemmStrategy::CoopMatNV && std::max(t.bm, t.bn) * (t.bk / 4) > 8 * t.invocations())
    return "the cooperative-matrix kernel prefetches at most 8 vec4s of each tile per invocation";
  if (t.strategy == GemmStrategy::Direct && (t.tm != t.bm || t.bk != 4))
    return "the direct kernel computes every row of its block in each invocation (TM = BM) and reads K in vec4s (BK = 4)";
  if (t.strategy != GemmStrategy::CoopMatNV && t.tm * t.tn > 256) return "more than 256 accumulators per invocation";
  if (t.invocations() > caps.max_workgroup_invocations || t.invocations() > caps.max_workgroup_size[0])
    return std::to_string(t.invocations()) + " invocations, more than the device's workgroup allows";
  if (t.shared_bytes() > caps.max_shared_memory)
    return std::to_string(t.shared_bytes()) + " bytes of shared memory, more than the device's " +
           std::to_string(caps.max_shared_memory);
  return "";
}

GemmNormRows gemm_norm_rows(const GemmTiles& t) {
  const uint32_t rows = t.strategy == GemmStrategy::Direct ? t.tm : t.bm;
  return {rows, std::max<uint32_t>(1, rows ? t.invocations() / rows : 1)};
}

std::string gemm_norm_fold_problem(const Capabilities& caps, const GemmTiles& t) {
  if (t.strategy == GemmStrategy::CoopMatNV) return "the cooperative-matrix kernel has no folded LayerNorm";
  if (t.split_k > 1) return "split-K has no folded LayerNorm (each slice would need the whole rows)";
  const GemmNormRows n = gemm_norm_rows(t);
  const uint64_t bytes = t.shared_bytes() + (uint64_t(n.rows) * n.parts * 3 + n.rows * 2) * 4;
  if (bytes > caps.max_shared_memory)
    return "with a folded LayerNorm's row statistics it needs " + std::to_string(bytes) +
           " bytes of shared memory, more than the device's " + std::to_string(caps.max_shared_memory);
  return "";
}

std::string gemm_glu_problem(const GemmTiles& t) {
  if (t.strategy == GemmStrategy::CoopMatNV) return "the cooperative-matrix kernel has no gated (SwiGLU) epilogue";
  if (t.split_k > 1) return "split-K has no gated (SwiGLU) epilogue (its partials hold one column per output)";
  if (t.tn % 2) return "a gated (SwiGLU) product needs an even TN (each invocation pairs gates with ups)";
  return "";
}

std::vector<GemmTiles> gemm_tile_designs() {
  // Short wide tiles (CPU drivers run a workgroup on one core, SIMD across invocations:
  // empty rows cost as much as full ones); square 64-128 blocks with 4x4 to 8x8 per
  // invocation (GPUs); small ones within 16 KiB and 128 invocations (mobile).
  constexpr GemmStrategy T = GemmStrategy::Tiled, D = GemmStrategy::Direct, C = GemmStrategy::CoopMatNV;
  return {
      {32, 64, 16, 4, 8},    {32, 128, 16, 4, 16},  {32, 128, 32, 4, 16}, {32, 256, 16, 4, 16}, {64, 64, 16, 4, 4},
      {64, 64, 16, 4, 8},    {64, 128, 16, 4, 16},  {64, 128, 16, 8, 8},  {128, 64, 16, 8, 8},  {128, 128, 16, 8, 8},
      {128, 128, 16, 8, 16}, {64, 32, 16, 4, 4},    {32, 32, 8, 4, 4},    {128, 64, 32, 8, 8},
      // Direct from global memory, rows in multiples of a CPU driver's 8 lanes, at most
      // 32 accumulators per invocation (what AVX-512's registers hold).
      {8, 64, 4, 8, 4, D},   {8, 128, 4, 8, 4, D},  {16, 64, 4, 16, 2, D}, {16, 128, 4, 16, 2, D}, {32, 16, 4, 32, 1, D},
      {8, 32, 4, 8, 2, D},
      // Wider, 64 to 128 accumulators, where texel loads (no gathers) make B's columns
      // cheap enough to hold more of them: the default table's on CPU drivers (16x256
      // with 8 per invocation; 24x128 with 4 on AVX-512 hosts, where it ran 1.1-1.4x
      // the 16x256 and 128 accumulators spilled more).
      {8, 128, 4, 8, 8, D}, {16, 256, 4, 16, 8, D}, {16, 128, 4, 16, 4, D}, {24, 128, 4, 24, 4, D},
      // NV cooperative matrices (fp16): 4 or 8 subgroups of 32, each 32x32 or 64x32 of
      // 16x16 accumulators, within 48 KiB of shared memory with the epilogue's block.
      {64, 64, 32, 32, 32, C}, {64, 64, 64, 32, 32, C}, {128, 64, 32, 64, 32, C}, {64, 128, 32, 32, 64, C},
      {128, 64, 32, 32, 32, C},
      // Split-K for products with few tiles of C (a short source or a batched decode step
      // by a Transformer-base's 512 columns: 8 to 16 workgroups where a GPU has 100+ SMs).
      {32, 64, 16, 4, 8, T, 4}, {64, 64, 16, 4, 4, T, 4}, {32, 64, 16, 4, 8, T, 8}, {32, 32, 8, 4, 4, T, 4},
      {64, 64, 32, 32, 32, C, 4}, {64, 64, 32, 32, 32, C, 8},
      // Prefetching the next step's tiles (GPUs: the H200 ran every tiled and cooperative-
      // matrix loop latency-bound, ~0.16 us per k at 24 rows): the designs its tune chose
      // and the largest blocks.
      {64, 64, 16, 4, 4, T, 1, true}, {128, 128, 16, 8, 8, T, 1, true}, {32, 32, 8, 4, 4, T, 4, true},
      {64, 64, 32, 32, 32, C, 1, true}, {128, 64, 32, 64, 32, C, 1, true}, {64, 64, 32, 32, 32, C, 4, true},
      {64, 64, 32, 32, 32, C, 8, true},
      // The cooperative-matrix prefetch designs' per-subgroup epilogue lets 128x128 blocks
      // fit: 4 subgroups of 64x64 (16 accumulators, each loaded matrix used 4 times) or 8
      // of 64x32, and 128x256 with 8 of 64x64, the shapes cuBLAS-class kernels run.
      {128, 128, 32, 64, 64, C, 1, true}, {128, 128, 32, 64, 32, C, 1, true}, {128, 256, 32, 64, 64, C, 1, true},
      {128, 128, 32, 64, 64, C, 4, true},
      // Wide staging, eight halves a load and a shared store (NVIDIA's samples' layout),
      // for the designs the H100 and H200 chose (64x64, split 8, 4 and none) and the two
      // 128x128 blocks, and with BK 64: twice the products between a step's two barriers
      // (at BK 32 a 32x32 subgroup runs 8 16x16x16 products a step). Not yet timed on a GPU.
      {64, 64, 32, 32, 32, C, 1, true, true}, {64, 64, 32, 32, 32, C, 4, true, true},
      {64, 64, 32, 32, 32, C, 8, true, true}, {128, 128, 32, 64, 64, C, 1, true, true},
      {128, 128, 32, 64, 32, C, 1, true, true}, {64, 64, 64, 32, 32, C, 1, true, true},
      {128, 128, 64, 64, 32, C, 1, true, true},
      // Skinny blocks for 24 to 32 rows (a short source, a batch-32 decode step), where a
      // 64-row block multiplies 40-62% padding: 32x64, two subgroups, split 8 and 16
      // (24x512x2048: 128 and 256 workgroups where 64x64 split 8 has 64).
      {32, 64, 32, 32, 32, C, 8, true, true}, {32, 64, 32, 32, 32, C, 16, true, true},
  };
}

std::vector<std::pair<GemmTiles, std::string>> gemm_designs_not_valid(const Capabilities& caps, DType precision) {
  std::vector<std::pair<GemmTiles, std::string>> refused;
  for (const GemmTiles& t : gemm_tile_designs())
    if (std::string why = gemm_tiles_problem(caps, t, precision); !why.empty()) refused.emplace_back(t, std::move(why));
  return refused;
}

std::vector<GemmTiles> gemm_tile_candidates(const Capabilities& caps, DType precision) {
  std::vector<GemmTiles> valid;
  for (const GemmTiles& t : gemm_tile_designs())
    if (gemm_tiles_problem(caps, t, precision).empty()) valid.push_back(t);
  // Where the device has tensor cores (real ones, not the emulation), their designs go
  // first: they are the likely winners in fp16, and a tune its budget cuts short skips the
  // last candidates of each row class.
  if (caps.cooperative_matrix_nv)
    std::stable_partition(valid.begin(), valid.end(),
                          [](const GemmTiles& t) { return t.strategy == GemmStrategy::CoopMatNV; });
  return valid;
}

namespace {

uint64_t fnv1a(const std::string& s) { return fnv1a64(s.data(), s.size()); }

std::string hex(uint64_t v) {
  char b[17];
  std::snprintf(b, sizeof b, "%016llx", static_cast<unsigned long long>(v));
  return b;
}

nlohmann::json classes_json(const GemmTuning& t) {
  nlohmann::json j = nlohmann::json::object();
  for (uint32_t c = 0; c < t.tiles.size(); ++c)
    if (const auto& x = t.tiles[c]) {
      nlohmann::json tiles = {x->bm, x->bn, x->bk, x->tm, x->tn};
      if (x->strategy == GemmStrategy::Direct) tiles.push_back("direct");
      if (x->strategy == GemmStrategy::CoopMatNV) tiles.push_back("coopmat_nv");
      if (x->split_k > 1 || x->prefetch) {  // [.., strategy, split_k(, "prefetch"(, "wide"))]: files without them stay valid
        if (x->strategy == GemmStrategy::Tiled) tiles.push_back("tiled");
        tiles.push_back(x->split_k);
        if (x->prefetch) tiles.push_back("prefetch");
        if (x->wide) tiles.push_back("wide");
      }
      j[std::to_string(c)] = tiles;
    }
  return j;
}

// The attention kernel per query-length class: {"0": "tiled", ...}.
nlohmann::json attention_json(const GemmTuning& t) {
  nlohmann::json j = nlohmann::json::object();
  for (uint32_t c = 0; c < t.attention.size(); ++c)
    if (const auto& k = t.attention[c]) j[std::to_string(c)] = attention_kernel_name(*k);
  return j;
}

// What the checksum covers: the classes, and the attention kernels when there are any
// (files written before attention was tuned keep their checksum).
std::string checksum(const nlohmann::json& classes, const nlohmann::json& attention) {
  return hex(fnv1a(attention.empty() ? classes.dump() : classes.dump() + attention.dump()));
}

}  // namespace

// The attention kernels by name (the tuning file's words; attention.cpp runs them).
const char* attention_kernel_name(AttentionKernel k) {
  switch (k) {
    case AttentionKernel::Rows: return "rows";
    case AttentionKernel::Tiled: return "tiled";
    case AttentionKernel::Direct: return "direct";
  }
  return "?";
}

std::optional<AttentionKernel> attention_kernel_from_name(const std::string& name) {
  for (AttentionKernel k : kAttentionKernels)
    if (name == attention_kernel_name(k)) return k;
  return std::nullopt;
}

uint32_t attention_length_class(uint32_t q_len) {
  uint32_t c = 0;
  while (q_len > kAttentionLengthClassLimits[c]) ++c;
  return c;
}

std::string attention_length_class_name(uint32_t c) {
  return c + 1 < kAttentionLengthClassLimits.size() ? "L <= " + std::to_string(kAttentionLengthClassLimits[c])
                                                    : "L > " + std::to_string(kAttentionLengthClassLimits[c - 1]);
}

std::string gemm_tuning_file_id(const std::string& identity) { return hex(fnv1a(identity)); }

std::string format_gemm_tuning(const std::string& identity, const GemmTuning& tuning) {
  const nlohmann::json classes = classes_json(tuning), attention = attention_json(tuning);
  nlohmann::json j = {{"schema", "vkformer-gemm-tuning/1"}, {"identity", identity}, {"classes", classes}};
  if (!attention.empty()) j["attention"] = attention;
  j["checksum"] = checksum(classes, attention);
  return j.dump(2) + "\n";
}

std::optional<GemmTuning> parse_gemm_tuning(const std::string& text, const std::string& identity,
                                            const Capabilities& caps, DType precision, std::string* why) {
  auto fail = [&](const std::string& reason) -> std::optional<GemmTuning> {
    if (why) *why = reason;
    return std::nullopt;
  };
  if (text.size() > (64u << 10)) return fail("larger than 64 KiB, which no tuning file is");
  nlohmann::json j;
  try {
    j = json_limits::parse(text);
  } catch (const json_limits::TooDeep& e) {
    return fail(e.what());
  } catch (const std::exception&) {
    return fail("not valid JSON");
  }
  if (!j.is_object() || j.value("schema", nlohmann::json()) != "vkformer-gemm-tuning/1") return fail("not a tuning file");
  if (j.value("identity", nlohmann::json()) != identity) return fail("made for another device, driver, vkformer or precision");
  const nlohmann::json classes = j.value("classes", nlohmann::json());
  const nlohmann::json attention = j.value("attention", nlohmann::json::object());
  if (!classes.is_object() || !attention.is_object() ||
      j.value("checksum", nlohmann::json()) != checksum(classes, attention))
    return fail("its checksum does not match");
  GemmTuning t;
  for (const auto& [key, value] : classes.items()) {
    if (key.size() != 1 || key[0] < '0' || key[0] >= char('0' + t.tiles.size())) return fail("an unknown row class");
    if (!value.is_array() || value.size() < 5 || value.size() > 9)
      return fail("tiles must be [bm, bn, bk, tm, tn], [bm, bn, bk, tm, tn, strategy], [bm, bn, bk, tm, tn, strategy, "
                  "split_k], [bm, bn, bk, tm, tn, strategy, split_k, \"prefetch\"] or [bm, bn, bk, tm, tn, strategy, "
                  "split_k, \"prefetch\", \"wide\"]");
    for (size_t i = 0; i < 5; ++i)
      if (!value[i].is_number_unsigned() || value[i].get<uint64_t>() > 4096) return fail("a tile size is not a small integer");
    GemmTiles tiles{value[0], value[1], value[2], value[3], value[4]};
    if (value.size() >= 6) {
      if (value[5] == "direct") tiles.strategy = GemmStrategy::Direct;
      else if (value[5] == "coopmat_nv") tiles.strategy = GemmStrategy::CoopMatNV;
      else if (value[5] != "tiled") return fail("an unknown strategy (\"tiled\", \"direct\" or \"coopmat_nv\")");
    }
    if (value.size() >= 7) {
      if (!value[6].is_number_unsigned() || value[6].get<uint64_t>() > kGemmMaxSplitK)
        return fail("split_k is not a small integer");
      tiles.split_k = value[6];
    }
    if (value.size() >= 8) {
      if (value[7] != "prefetch") return fail("an unknown tile option (\"prefetch\")");
      tiles.prefetch = true;
    }
    if (value.size() == 9) {
      if (value[8] != "wide") return fail("an unknown tile option after \"prefetch\" (\"wide\")");
      tiles.wide = true;
    }
    if (const std::string problem = gemm_tiles_problem(caps, tiles, precision); !problem.empty())
      return fail(tiles.name() + ": " + problem);
    t.tiles[key[0] - '0'] = tiles;
  }
  // Attention kernels by name; whether one runs depends on the head size too, which
  // attention() checks at each use (falling back to the default where it cannot).
  for (const auto& [key, value] : attention.items()) {
    if (key.size() != 1 || key[0] < '0' || key[0] >= char('0' + t.attention.size()))
      return fail("an unknown attention length class");
    const auto k = value.is_string() ? attention_kernel_from_name(value.get<std::string>()) : std::nullopt;
    if (!k) return fail("an unknown attention kernel (\"rows\", \"tiled\" or \"direct\")");
    t.attention[key[0] - '0'] = *k;
  }
  return t;
}

}  // namespace vkf
