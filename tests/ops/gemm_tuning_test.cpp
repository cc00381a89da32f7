// GEMM variants and their tuning (include/vkformer/gemm_tuning.hpp): every candidate the
// tuner may pick on this device (as it is, and clamped to the portable profile) passes
// the double reference at awkward shapes in both precisions; a wrong candidate is
// rejected; invalid tiles are refused by name; the tuning file is untrusted input that a
// mismatch of any kind leaves unused, and a good one is what gemm() runs.
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "support/ops_test.hpp"
#include "vkformer/gemm_tuning.hpp"
#include "hash.hpp"

namespace vkf::test {
namespace {

class GemmTuningTest : public OpsTest {};

// The verifier's bound (1e-5 of sum |a b|) against fp32 accumulation's ~K * 2^-24: at
// K = 260 the worst case is 1.5e-5 and the typical ~1e-7, so a correct kernel passes
// with a wide margin, while a skipped k-tile or a wrong element misses by orders.
TEST_P(GemmTuningTest, EveryCandidatePassesTheReferenceAtAwkwardShapes) {
  const auto seed = test_seed();
  VKF_SEED_TRACE(seed);
  const auto candidates = gemm_tile_candidates(ctx().capabilities(), dtype());
  ASSERT_FALSE(candidates.empty());
  const uint32_t shapes[][3] = {{5, 3, 1}, {17, 129, 259}, {65, 1000, 4}, {255, 17, 260}};
  uint64_t s = seed;
  for (const GemmTiles& t : candidates)
    for (const auto& shape : shapes) {
      const GemmCheck c = check_gemm_tiles(ctx(), dtype(), shape[0], shape[1], shape[2], t, s++);
      EXPECT_TRUE(c.ok) << t.name() << " at " << shape[0] << "x" << shape[1] << "x" << shape[2] << ": error " << c.error;
    }
}

TEST_P(GemmTuningTest, AWrongCandidateIsRejected) {
  const GemmTiles t = gemm_tile_candidates(ctx().capabilities(), dtype()).front();
  EXPECT_TRUE(check_gemm_tiles(ctx(), dtype(), 17, 33, 64, t, 7).ok);
  // One output off by 1% of its size, or one left unwritten: the candidate fails.
  const GemmCheck off = check_gemm_tiles(ctx(), dtype(), 17, 33, 64, t, 7, [](std::vector<float>& c) { c[40] += 0.1f; });
  EXPECT_FALSE(off.ok);
  EXPECT_GT(off.error, 1e-4);
  const GemmCheck unwritten =
      check_gemm_tiles(ctx(), dtype(), 17, 33, 64, t, 7, [](std::vector<float>& c) { c.back() = NAN; });
  EXPECT_FALSE(unwritten.ok);
}

// Every attention kernel valid here passes the tuner's check (grouped heads, causal,
// padding, head sizes 17 and 64); a wrong or unwritten output fails it.
TEST_P(GemmTuningTest, EveryAttentionKernelPassesTheTunersCheckAndAWrongOneFails) {
  int valid = 0;
  for (AttentionKernel k : kAttentionKernels)
    for (uint32_t d : {17u, 64u}) {
      if (!attention_kernel_problem(ctx().capabilities(), k, d, dtype()).empty()) continue;
      ++valid;
      const AttentionCheck good = check_attention_kernel(ctx(), dtype(), k, d, 11);
      EXPECT_TRUE(good.ok) << attention_kernel_name(k) << " d=" << d << ": error " << good.error;
      const AttentionCheck off =
          check_attention_kernel(ctx(), dtype(), k, d, 11, [](std::vector<float>& o) { o[o.size() / 3] += 0.05f; });
      EXPECT_FALSE(off.ok) << attention_kernel_name(k);
      const AttentionCheck unwritten =
          check_attention_kernel(ctx(), dtype(), k, d, 11, [](std::vector<float>& o) { o.back() = NAN; });
      EXPECT_FALSE(unwritten.ok) << attention_kernel_name(k);
    }
  EXPECT_GE(valid, 2);
}

TEST_P(GemmTuningTest, InvalidTilesAreRefusedByName) {
  const Capabilities& caps = ctx().capabilities();
  EXPECT_NE(gemm_tiles_problem(caps, {32, 128, 6, 4, 16}, dtype()).find("not a multiple of 4"), std::string::npos);
  EXPECT_NE(gemm_tiles_problem(caps, {32, 128, 16, 5, 16}, dtype()).find("TM must divide BM"), std::string::npos);
  EXPECT_NE(gemm_tiles_problem(caps, {4096, 4096, 16, 4, 4}, dtype()).find("invocations"), std::string::npos);
  EXPECT_NE(gemm_tiles_problem(caps, {0, 128, 16, 4, 16}, dtype()).find("0"), std::string::npos);
  Buffer a = ctx().buffer(64 * 64 * 4), b = ctx().buffer(64 * 64 * 4), c = ctx().buffer(64 * 64 * 4);
  auto cl = ctx().command_list();
  try {
    ops().gemm(cl, {.M = 64, .N = 64, .K = 64, .trans_b = true, .tiles = GemmTiles{32, 128, 6, 4, 16}},
               {.a = a.view(), .b = b.view(), .c = c.view()});
    ADD_FAILURE() << "invalid tiles ran";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("tiles tiled 32x128x6/4x16 cannot run"), std::string::npos) << e.what();
  }
}

VKF_FOR_EACH_DTYPE(GemmTuningTest);

// The cards we have tuned on (tuned_device_tiles): the H200's (and H100's) table where its ids and
// its features are, per row class and precision, and nothing where the ids differ or the
// portable profile's clamps take the cooperative matrices away.
TEST(GemmTunedDevices, TheH200AndH100RunWhatTheirTunesChoseAndNothingElseDoes) {
  Capabilities h200;
  h200.vendor_id = 0x10de;
  h200.device_id = 0x2335;
  h200.type = DeviceType::DiscreteGpu;
  h200.max_workgroup_invocations = 1024;
  h200.max_workgroup_size = {1024, 1024, 64};
  h200.max_shared_memory = 49152;
  h200.subgroup_size = h200.min_subgroup_size = h200.max_subgroup_size = 32;
  h200.subgroup_basic = h200.subgroup_arithmetic = h200.subgroup_shuffle = true;
  h200.storage_16bit = h200.float16_arithmetic = h200.cooperative_matrix_nv = true;
  for (uint32_t rows : {1u, 24u, 64u, 65u, 256u, 257u, 4096u}) {
    SCOPED_TRACE(rows);
    const auto f16 = tuned_device_tiles(h200, DType::F16, rows);
    ASSERT_TRUE(f16.has_value());
    EXPECT_EQ(f16->strategy, GemmStrategy::CoopMatNV);
    EXPECT_EQ(f16->split_k, rows <= 64 ? 8u : rows <= 256 ? 4u : 1u);
    EXPECT_TRUE(f16->prefetch);
    EXPECT_EQ(gemm_tiles_problem(h200, *f16, DType::F16), "");
    const auto f32 = tuned_device_tiles(h200, DType::F32, rows);
    EXPECT_EQ(f32.has_value(), rows > 64) << "fp32 kept the default table at M <= 64";
    if (f32) EXPECT_EQ(gemm_tiles_problem(h200, *f32, DType::F32), "");
  }
  Capabilities h100 = h200;
  h100.device_id = 0x2330;  // an H100: fp16 tuned (the same designs, split differently), fp32 not yet
  EXPECT_EQ(tuned_device_tiles(h100, DType::F16, 300).value_or(GemmTiles{}).split_k, 4u);
  EXPECT_FALSE(tuned_device_tiles(h100, DType::F32, 300).has_value());
  Capabilities other = h200;
  other.device_id = 0x2331;  // an H100 PCIe: not tuned here
  EXPECT_FALSE(tuned_device_tiles(other, DType::F16, 24).has_value());
  Capabilities clamped = h200;  // what the portable profile leaves (Device::clamp_to_portable_profile)
  clamped.cooperative_matrix_nv = clamped.float16_arithmetic = false;
  clamped.max_workgroup_invocations = 128;
  EXPECT_FALSE(tuned_device_tiles(clamped, DType::F16, 24).has_value());
}

// The tuning file, as untrusted input, on a context of its own (its own cache directory).
TEST(GemmTuningFile, AGoodFileIsUsedAndAnyMismatchIsIgnoredWithAWarning) {
  MessageLog log;
  ContextOptions o = test_options(log);
  std::vector<std::string> warnings;
  std::mutex mutex;
  const LogSink inner = o.log;
  o.log = [&](LogLevel level, std::string_view m) {
    if (level == LogLevel::Warning) {
      std::lock_guard lock(mutex);
      warnings.emplace_back(m);
    }
    if (inner) inner(level, m);
  };
  const std::string dir = scratch_dir("gemm_tuning");
  o.cache_dir = dir;
  Context ctx(o);
  const std::string path = gemm_tuning_path(ctx, DType::F32);
  ASSERT_EQ(path.rfind(dir, 0), 0u) << path;
  EXPECT_FALSE(load_gemm_tuning(ctx, DType::F32).has_value());  // none yet: the default table
  const auto candidates = gemm_tile_candidates(ctx.capabilities(), DType::F32);
  GemmTuning tuned;
  tuned.tiles[0] = candidates.back();
  save_gemm_tuning(ctx, DType::F32, tuned);
  const auto loaded = load_gemm_tuning(ctx, DType::F32);
  ASSERT_TRUE(loaded.has_value());
  EXPECT_EQ(loaded->tiles[0], candidates.back());
  EXPECT_FALSE(loaded->tiles[1].has_value());
  EXPECT_FALSE(load_gemm_tuning(ctx, DType::F16).has_value());  // another precision, another file
  {  // attention kernels per length class ride in the same file, under the checksum
    GemmTuning with_attention = tuned;
    with_attention.attention[2] = AttentionKernel::Rows;
    save_gemm_tuning(ctx, DType::F32, with_attention);
    const auto again = load_gemm_tuning(ctx, DType::F32);
    ASSERT_TRUE(again.has_value());
    EXPECT_EQ(again->attention[2], AttentionKernel::Rows);
    EXPECT_FALSE(again->attention[0].has_value());
    EXPECT_EQ(Ops(ctx, DType::F32).attention_kernel({.head_dim = 64, .q_len = 300, .kv_len = 300}),
              AttentionKernel::Rows);
    const Attention short_input{.head_dim = 64, .q_len = 24, .kv_len = 24};
    EXPECT_EQ(Ops(ctx, DType::F32).attention_kernel(short_input),
              Ops(ctx, DType::F32).default_attention_kernel(short_input));
    save_gemm_tuning(ctx, DType::F32, tuned);
  }
  // gemm() runs the tuned tiles for that row class, the default table's for the others.
  Ops ops(ctx, DType::F32);
  EXPECT_EQ(ops.gemm_variant({.M = 24, .N = 512, .K = 512, .trans_b = true}), candidates.back().name());
  // (or, on a card we have tuned on, what its built-in table names: the H200 runs this)
  const Gemm other_class{.M = 200, .N = 512, .K = 512, .trans_b = true};
  EXPECT_EQ(ops.gemm_variant(other_class),
            tuned_device_tiles(ctx.capabilities(), DType::F32, 200).value_or(ops.default_gemm_tiles(other_class)).name());

  // Split-K rides in the tiles as [bm, bn, bk, tm, tn, strategy, split_k], prefetch after
  // it as "prefetch": each comes back from the file and runs for its row class.
  auto round_trips = [&](const GemmTiles& tiles, const std::string& name) {
    GemmTuning t = tuned;
    t.tiles[2] = tiles;
    save_gemm_tuning(ctx, DType::F32, t);
    const auto again = load_gemm_tuning(ctx, DType::F32);
    ASSERT_TRUE(again.has_value());
    EXPECT_EQ(again->tiles[2], tiles);
    EXPECT_EQ(Ops(ctx, DType::F32).gemm_variant({.M = 300, .N = 512, .K = 512, .trans_b = true}), name);
    save_gemm_tuning(ctx, DType::F32, tuned);
  };
  round_trips(GemmTiles{32, 64, 16, 4, 8, GemmStrategy::Tiled, 4}, "tiled 32x64x16/4x8 split 4");
  // (64 invocations: within the portable profile's 128, which an H100's portable run
  // of this test applies; 64x64x16/4x4 prefetch, 256, was refused there.)
  round_trips(GemmTiles{32, 32, 8, 4, 4, GemmStrategy::Tiled, 4, true}, "tiled 32x32x8/4x4 split 4 prefetch");
  const std::string good = [&] {
    std::ifstream f(path);
    return std::string(std::istreambuf_iterator<char>(f), {});
  }();
  auto with = [&](const std::function<void(nlohmann::json&)>& edit, const std::string& why) {
    nlohmann::json j = nlohmann::json::parse(good);
    edit(j);
    std::ofstream(path) << j.dump();
    warnings.clear();
    EXPECT_FALSE(load_gemm_tuning(ctx, DType::F32).has_value()) << why;
    ASSERT_EQ(warnings.size(), 1u) << why;
    EXPECT_NE(warnings[0].find(why), std::string::npos) << warnings[0];
  };
  with([](auto& j) { j["classes"]["0"][0] = 64; }, "checksum does not match");
  with([](auto& j) { j["attention"] = {{"1", "tiled"}}; }, "checksum does not match");
  with([](auto& j) { j["identity"] = "vkformer 0.0.1; another GPU"; }, "made for another device");
  with([](auto& j) { j["schema"] = "something else"; }, "not a tuning file");
  with([&](auto& j) {  // tiles that cannot run here, with a checksum to match
    j["classes"] = {{"0", {32, 128, 6, 4, 16}}};
    const std::string s = j["classes"].dump();
    const uint64_t h = fnv1a64(s.data(), s.size());
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
    j["checksum"] = hex;
  }, "not a multiple of 4");
  auto with_classes = [&](const nlohmann::json& classes, const std::string& why) {  // a checksum to match
    with([&](auto& j) {
      j["classes"] = classes;
      j.erase("attention");
      const std::string s = j["classes"].dump();
      const uint64_t h = fnv1a64(s.data(), s.size());
      char hex[17];
      std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
      j["checksum"] = hex;
    }, why);
  };
  with_classes({{"0", {32, 64, 16, 4, 8, "tiled", 17}}}, "split_k is not a small integer");
  with_classes({{"0", {32, 64, 16, 4, 8, "tiled", 0}}}, "split-K runs 1 to 16 slices, not 0");
  with_classes({{"0", {8, 64, 4, 8, 4, "direct", 2}}}, "the direct kernel (CPU drivers, which it fills already) has no split-K");
  with_classes({{"0", {32, 64, 16, 4, 8, "fast"}}}, "an unknown strategy");
  with_classes({{"0", {32, 64, 16, 4, 8, "tiled", 1, "prefetched"}}}, "an unknown tile option");
  with_classes({{"0", {8, 64, 4, 8, 4, "direct", 1, "prefetch"}}}, "the direct kernel (no shared-memory tiles");
  with_classes({{"0", {32, 64, 16, 4, 8, "tiled", 1, "prefetch", "broad"}}}, "an unknown tile option after");
  with_classes({{"0", {32, 64, 16, 4, 8, "tiled", 1, "prefetch", "wide"}}}, "wide staging (eight halves a load)");
  with_classes({{"0", {32, 64, 16, 4, 8, "tiled", 1, "prefetch", "wide", 1}}}, "tiles must be");
  with([&](auto& j) {  // an attention kernel by an unknown name, with a checksum to match
    j["attention"] = {{"0", "fastest"}};
    const std::string s = j["classes"].dump() + j["attention"].dump();
    const uint64_t h = fnv1a64(s.data(), s.size());
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
    j["checksum"] = hex;
  }, "unknown attention kernel");
  std::ofstream(path) << "{not json";
  warnings.clear();
  EXPECT_FALSE(load_gemm_tuning(ctx, DType::F32).has_value());
  EXPECT_EQ(warnings.size(), 1u);
  std::ofstream(path) << std::string(100000, ' ');
  warnings.clear();
  EXPECT_FALSE(load_gemm_tuning(ctx, DType::F32).has_value());
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("larger than 64 KiB"), std::string::npos);
  std::filesystem::remove(path);
  std::filesystem::create_directory(path);  // a directory in its place is not read
  warnings.clear();
  EXPECT_FALSE(load_gemm_tuning(ctx, DType::F32).has_value());
  EXPECT_EQ(warnings.size(), 1u);
  std::filesystem::remove_all(dir);
}

// The tuner itself (tune_gemm), on a context and cache directory of its own: a
// deliberately wrong candidate is rejected and never chosen, every other valid one is
// verified and timed, and what it keeps is in the tuning file and what gemm() runs.
TEST(GemmTuner, RejectsAWrongCandidateAndKeepsWhatItChoseForGemm) {
  MessageLog log;
  ContextOptions o = test_options(log);
  const std::string dir = scratch_dir("gemm_tuner");
  o.cache_dir = dir;
  Context ctx(o);
  const Gemm shape{.M = 24, .N = 64, .K = 64, .trans_b = true};
  const auto candidates = gemm_tile_candidates(ctx.capabilities(), DType::F32);
  ASSERT_GE(candidates.size(), 2u);
  const GemmTiles wrong = candidates.front();
  GemmTuneOptions t{.precision = DType::F32, .budget_s = 600, .shapes = {shape}, .seconds_per_timing = 0.01};
  t.min_speedup_ratio = 2.0;  // keep the fastest verified candidate whatever its margin, to see it used
  t.attention_heads = 2, t.attention_head_dim = 16, t.attention_lengths = {17};
  // An attention kernel other than the default is wrong too (the default is the fallback,
  // trusted as the default table's tiles are).
  const Attention probe{.heads = 2, .head_dim = 16, .q_len = 17, .kv_len = 17, .causal = true};
  const AttentionKernel attention_default = Ops(ctx, DType::F32).default_attention_kernel(probe);
  std::optional<AttentionKernel> wrong_attention;
  for (AttentionKernel k : kAttentionKernels)
    if (k != attention_default && attention_kernel_problem(ctx.capabilities(), k, 16, DType::F32).empty())
      wrong_attention = k;
  ASSERT_TRUE(wrong_attention.has_value());
  t.tamper_attention = [&](AttentionKernel k, std::vector<float>& out) {
    if (k == *wrong_attention) out[out.size() / 2] += 1.0f;
  };
  t.tamper = [&](const GemmTiles& tiles, std::vector<float>& c) {
    if (tiles == wrong) c[c.size() / 2] += 1.0f;  // one output off by far more than the bound
  };
  std::vector<std::string> lines;
  t.progress = [&](const std::string& line) { lines.push_back(line); };
  const GemmTuneReport r = tune_gemm(ctx, t);
  ASSERT_EQ(r.classes.size(), 1u);
  const auto& cls = r.classes[0];
  EXPECT_FALSE(cls.out_of_time);
  ASSERT_EQ(cls.candidates.size(), candidates.size());
  for (const auto& c : cls.candidates) {
    if (c.tiles == wrong) {
      EXPECT_FALSE(c.verified) << c.tiles.name();
      EXPECT_GT(c.error, 1e-4);
    } else {
      EXPECT_TRUE(c.verified) << c.tiles.name() << ": error " << c.error;
      EXPECT_GT(c.seconds, 0.0);
    }
  }
  EXPECT_NE(cls.chosen, wrong);
  bool reported = false;
  for (const auto& line : lines) reported |= line.find("REJECTED") != std::string::npos && line.find(wrong.name()) != std::string::npos;
  EXPECT_TRUE(reported) << "the rejection is reported";
  ASSERT_EQ(r.attention.size(), 1u);
  const auto& att = r.attention[0];
  EXPECT_EQ(att.fallback, attention_default);
  for (const auto& c : att.candidates) {
    if (c.kernel == *wrong_attention) EXPECT_FALSE(c.verified);
    else EXPECT_TRUE(c.verified) << attention_kernel_name(c.kernel) << ": error " << c.error;
  }
  EXPECT_NE(att.chosen, *wrong_attention);
  EXPECT_EQ(Ops(ctx, DType::F32).attention_kernel(probe), att.chosen);  // what attention() runs from now on
  // What it chose is in the file and is what gemm() runs from now on, in this process too.
  ASSERT_FALSE(r.file.empty());
  EXPECT_TRUE(std::filesystem::exists(r.file));
  const auto saved = load_gemm_tuning(ctx, DType::F32);
  ASSERT_TRUE(saved.has_value());
  const uint32_t row_class = gemm_row_class(shape.M);
  if (cls.chosen == cls.fallback) EXPECT_FALSE(saved->tiles[row_class].has_value());
  else EXPECT_EQ(saved->tiles[row_class], cls.chosen);
  EXPECT_EQ(Ops(ctx, DType::F32).gemm_variant(shape), cls.chosen.name());
  // A budget too small for every candidate says so; a bad budget or no disk cache is refused.
  t.budget_s = 1e-3;
  t.tamper = {};
  t.tamper_attention = {};
  EXPECT_TRUE(tune_gemm(ctx, t).classes.at(0).out_of_time);
  t.budget_s = 0;
  EXPECT_THROW(tune_gemm(ctx, t), Error);
  std::filesystem::remove_all(dir);
  ContextOptions off = test_options(log);
  off.disk_cache = false;
  Context no_cache(off);
  t.budget_s = 1;
  try {
    tune_gemm(no_cache, t);
    ADD_FAILURE() << "tuned with no disk cache";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("disk cache is off"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace vkf::test
