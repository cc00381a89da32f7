// The cooperative-matrix GEMM (shaders/gemm_coopmat.comp, GemmStrategy::CoopMatNV). Its
// SPIR-V is compiled by the runtime's own compiler and validated for Vulkan 1.1 on every
// machine, with the capabilities a device must offer to load it. It runs against the
// double reference at awkward shapes here, and in gemm_test with every transpose,
// epilogue and batch as every tuner candidate does, wherever the device offers NV
// cooperative matrices (NVIDIA GPUs); elsewhere the run is skipped, saying why. Where
// it cannot run, its tiles are refused by name.
#include <algorithm>
#include <cstdio>

#include "ops/reference.hpp"
#include "shader_compiler.hpp"  // lib/gpu: the runtime's GLSL compiler and SPIR-V check
#include "support/ops_test.hpp"
#include "vkformer/blocks.hpp"
#include "vkformer/gemm_tuning.hpp"

namespace vkf::test {
namespace {

bool declares_capability(const std::vector<uint32_t>& spirv, uint32_t capability) {
  for (size_t i = 5; i < spirv.size();) {  // after the header: instructions, word count in the high half
    const uint32_t words = spirv[i] >> 16, opcode = spirv[i] & 0xffff;
    if (words == 0) return false;
    if (opcode == 17 /* OpCapability */ && i + 1 < spirv.size() && spirv[i + 1] == capability) return true;
    i += words;
  }
  return false;
}

TEST(GemmCoopMat, CompilesToValidSpirvThatAsksForCooperativeMatricesAndTheVulkanMemoryModel) {
  const Defines variants[] = {{{"VKF_FP16_STORAGE", "1"}},
                              {{"VKF_FP16_STORAGE", "1"}, {"VKF_RTE_FP16", "1"}},
                              {{"VKF_FP16_STORAGE", "1"}, {"PREFETCH", "1"}},
                              {{"VKF_FP16_STORAGE", "1"}, {"PREFETCH", "1"}, {"SPLIT_K", "4"}},
                              {{"VKF_FP16_STORAGE", "1"}, {"PREFETCH", "1"}, {"PREFETCH_LAYOUT", "1"}},
                              {{"VKF_FP16_STORAGE", "1"}, {"PREFETCH", "1"}, {"PREFETCH_LAYOUT", "1"}, {"SPLIT_K", "4"}},
                              {{"VKF_FP16_STORAGE", "1"}, {"PREFETCH_LAYOUT", "1"}},
                              {{"VKF_FP16_STORAGE", "1"}, {"PREFETCH", "1"}, {"PREFETCH_LAYOUT", "1"}, {"WIDE", "1"}},
                              {{"VKF_FP16_STORAGE", "1"}, {"PREFETCH", "1"}, {"PREFETCH_LAYOUT", "1"}, {"WIDE", "1"},
                               {"SPLIT_K", "4"}}};
  // Each variant compiles to SPIR-V that validates, and asks for cooperative matrices
  // (CooperativeMatrixNV, 5357) and fp16 arithmetic (Float16, 9) exactly where expected.
  auto check = [](const Defines& d, bool real) {
    const auto spirv = gpu::compile_glsl("gemm_coopmat.comp", gpu::embedded_source("gemm_coopmat.comp"), d);
    ASSERT_FALSE(spirv.empty());
    EXPECT_EQ(gpu::spirv_problem(spirv), "") << gpu::describe_variant(d);
    EXPECT_EQ(declares_capability(spirv, 5357), real) << "CooperativeMatrixNV, " << gpu::describe_variant(d);
    if (real) EXPECT_TRUE(declares_capability(spirv, 5345)) << "VulkanMemoryModel";
    else EXPECT_FALSE(declares_capability(spirv, 9)) << "Float16";
  };
  for (const Defines& d : variants) check(d, true);
  // Emulated (VKF_EMULATE_COOPMAT=1): the same kernel asking for neither cooperative
  // matrices nor fp16 arithmetic, which CPU drivers leave off.
  check({{"VKF_FP16_STORAGE", "1"}, {"COOPMAT_EMULATED", "1"}}, false);
  check({{"VKF_FP16_STORAGE", "1"}, {"COOPMAT_EMULATED", "1"}, {"PREFETCH", "1"}, {"PREFETCH_LAYOUT", "1"},
         {"SPLIT_K", "4"}},
        false);
  check({{"VKF_FP16_STORAGE", "1"}, {"COOPMAT_EMULATED", "1"}, {"PREFETCH", "1"}, {"PREFETCH_LAYOUT", "1"}, {"WIDE", "1"}},
        false);
}

// A device without NV cooperative matrices, with this much shared memory and these
// fixed subgroups (the tests set the rest).
Capabilities device_without_coopmat(uint32_t shared_bytes, uint32_t subgroup) {
  Capabilities c;
  c.max_shared_memory = shared_bytes;
  c.max_workgroup_invocations = 1024;
  c.max_workgroup_size = {1024, 1024, 64};
  c.subgroup_size = c.min_subgroup_size = c.max_subgroup_size = subgroup;
  return c;
}

TEST(GemmCoopMat, RefusedByNameWhereItCannotRun) {
  const GemmTiles t{64, 64, 32, 32, 32, GemmStrategy::CoopMatNV};
  const Capabilities none = device_without_coopmat(49152, 32);
  EXPECT_NE(gemm_tiles_problem(none, t, DType::F16).find("no NV cooperative matrices"), std::string::npos);
  Capabilities nv = none;
  nv.cooperative_matrix_nv = true;
  EXPECT_EQ(gemm_tiles_problem(nv, t, DType::F16), "");
  EXPECT_NE(gemm_tiles_problem(nv, t, DType::F32).find("fp16 storage only"), std::string::npos);
  Capabilities wave64 = nv;
  wave64.min_subgroup_size = wave64.max_subgroup_size = 64;
  EXPECT_NE(gemm_tiles_problem(wave64, t, DType::F16).find("32 invocations"), std::string::npos);
  EXPECT_NE(gemm_tiles_problem(nv, {64, 64, 24, 32, 32, GemmStrategy::CoopMatNV}, DType::F16).find("multiples of 16"),
            std::string::npos);
  EXPECT_NE(gemm_tiles_problem(nv, {128, 128, 32, 64, 64, GemmStrategy::CoopMatNV}, DType::F16).find("shared memory"),
            std::string::npos);
  // The prefetch designs' epilogue holds one 16x16 block per subgroup, not the block of
  // C: 128x128 fits in 2 * 40 * 256 + 4 * 1024 bytes.
  const GemmTiles wide{128, 128, 32, 64, 64, GemmStrategy::CoopMatNV, 1, true};
  EXPECT_EQ(wide.shared_bytes(), 2u * 40 * 256 + 4 * 1024);
  EXPECT_EQ(gemm_tiles_problem(nv, wide, DType::F16), "");
  EXPECT_NE(gemm_tiles_problem(nv, {64, 64, 64, 64, 64, GemmStrategy::CoopMatNV, 1, true}, DType::F16)
                .find("at most 8 vec4s"),
            std::string::npos);
  // Wide staging is a form of the prefetch designs' only: the same tiles and shared
  // memory, named, and kept by the tuning file.
  const GemmTiles wide8{128, 128, 32, 64, 64, GemmStrategy::CoopMatNV, 1, true, true};
  EXPECT_EQ(gemm_tiles_problem(nv, wide8, DType::F16), "");
  EXPECT_EQ(wide8.shared_bytes(), wide.shared_bytes());
  EXPECT_EQ(wide8.name(), "coopmat_nv 128x128x32/64x64 prefetch wide");
  EXPECT_NE(gemm_tiles_problem(nv, {64, 64, 32, 32, 32, GemmStrategy::CoopMatNV, 1, false, true}, DType::F16)
                .find("form of the cooperative-matrix prefetch designs'"),
            std::string::npos);
  EXPECT_NE(gemm_tiles_problem(nv, {64, 64, 16, 4, 4, GemmStrategy::Tiled, 1, true, true}, DType::F16)
                .find("form of the cooperative-matrix prefetch designs'"),
            std::string::npos);
  GemmTuning tuning;
  tuning.tiles[2] = GemmTiles{64, 64, 32, 32, 32, GemmStrategy::CoopMatNV, 4, true, true};
  tuning.tiles[1] = GemmTiles{64, 64, 32, 32, 32, GemmStrategy::CoopMatNV, 4, true};
  std::string why;
  const auto back = parse_gemm_tuning(format_gemm_tuning("nv", tuning), "nv", nv, DType::F16, &why);
  ASSERT_TRUE(back.has_value()) << why;
  EXPECT_EQ(back->tiles[2], tuning.tiles[2]);
  EXPECT_EQ(back->tiles[1], tuning.tiles[1]);
  EXPECT_FALSE(back->tiles[1]->wide);
  // Every cooperative-matrix design is a candidate on such a device in fp16, none in fp32.
  const auto designs = gemm_tile_designs();
  const auto coop = std::count_if(designs.begin(), designs.end(),
                                  [](const GemmTiles& d) { return d.strategy == GemmStrategy::CoopMatNV; });
  ASSERT_GT(coop, 0);
  auto count_coop = [](const std::vector<GemmTiles>& v) {
    return std::count_if(v.begin(), v.end(), [](const GemmTiles& d) { return d.strategy == GemmStrategy::CoopMatNV; });
  };
  EXPECT_EQ(count_coop(gemm_tile_candidates(nv, DType::F16)), coop);
  // ... and first, in the designs' order, so a tune cut short by its budget still tries them.
  const auto nv_candidates = gemm_tile_candidates(nv, DType::F16);
  EXPECT_TRUE(std::is_partitioned(nv_candidates.begin(), nv_candidates.end(),
                                  [](const GemmTiles& d) { return d.strategy == GemmStrategy::CoopMatNV; }));
  EXPECT_EQ(nv_candidates.front(), (GemmTiles{64, 64, 32, 32, 32, GemmStrategy::CoopMatNV}));
  EXPECT_EQ(count_coop(gemm_tile_candidates(nv, DType::F32)), 0);
  EXPECT_EQ(count_coop(gemm_tile_candidates(none, DType::F16)), 0);
}

// Emulation (Policy::emulate_coopmat, VKF_EMULATE_COOPMAT=1) lifts the device's
// cooperative-matrix and subgroup-size checks, not the fp16-only rule.
TEST(GemmCoopMat, EmulationLiftsTheDeviceChecks) {
  Capabilities emulated = device_without_coopmat(32768, 8);  // lavapipe's
  emulated.cooperative_matrix_emulated = true;
  const GemmTiles t{64, 64, 32, 32, 32, GemmStrategy::CoopMatNV, 1, true};
  EXPECT_EQ(gemm_tiles_problem(emulated, t, DType::F16), "");
  EXPECT_NE(gemm_tiles_problem(emulated, t, DType::F32).find("fp16 storage only"), std::string::npos);
  emulated.cooperative_matrix_emulated = false;
  EXPECT_NE(gemm_tiles_problem(emulated, t, DType::F16).find("no NV cooperative matrices"), std::string::npos);
}

class GemmCoopMatRun : public OpsTest {};

// Tolerance: fp16 inputs (already fp16 in storage), exact fp16 x fp16 products and fp32
// accumulation, as the other kernels; the stored fp16 result adds 2^-11 of |c|.
TEST_P(GemmCoopMatRun, EveryVariantAtAwkwardShapesTransposesAndEpilogues) {
  const Capabilities& caps = ctx().capabilities();
  if (!caps.cooperative_matrix_nv && !caps.cooperative_matrix_emulated)
    GTEST_SKIP() << "device '" << caps.name
                 << "' offers no NV cooperative matrices with 16x16x16 fp16 products (lavapipe has none): the kernel's "
                    "SPIR-V is checked above, its run needs an NVIDIA GPU, its logic runs emulated with "
                    "VKF_EMULATE_COOPMAT=1 (CTest: ops_coopmat_emulated)";
  if (dtype() != DType::F16) GTEST_SKIP() << "the cooperative-matrix kernel runs fp16 storage only";
  const auto seed = test_seed();
  VKF_SEED_TRACE(seed);
  uint64_t s = seed;
  std::vector<std::string> ran;
  bool staged[2] = {false, false};  // blocks checked with the scalar, the vec4 staging
  for (const GemmTiles& t : gemm_tile_candidates(caps, dtype())) {
    if (t.strategy != GemmStrategy::CoopMatNV) continue;
    for (auto [M, N, K] : {std::tuple{1u, 1u, 1u}, {3u, 17u, 255u}, {17u, 3u, 1000u}, {255u, 129u, 64u},
                           {1030u, 70u, 33u}})
      EXPECT_TRUE(check_gemm_tiles(ctx(), dtype(), M, N, K, t, s++).ok) << t.name() << " at " << M << "x" << N << "x" << K;
    // A weight in blocks, dequantized as it is staged into the fp16 tiles: by the first
    // design with the prefetch's vec4 staging and the first with the scalar one, over a
    // K-quant (K whole super-blocks) and a 32-value type (256 k + 32), each a variant the
    // emulation takes seconds to compile.
    if (!staged[t.prefetch]) {
      staged[t.prefetch] = true;
      for (BlockType type : {t.prefetch ? BlockType::Q4_K : BlockType::Q6_K, t.prefetch ? BlockType::Q5_1 : BlockType::Q8_0})
        EXPECT_TRUE(check_gemm_tiles(ctx(), dtype(), 40, 33, is_k_quant(type) ? 256 : 288, t, s++, {}, type).ok)
            << t.name() << " over " << block_type_name(type);
    }
    ran.push_back(t.name());
  }
  // The portable profile's 16 KiB and 128 invocations hold no cooperative-matrix design.
  if (!GetParam().portable) {
    EXPECT_FALSE(ran.empty()) << "no cooperative-matrix design fits device '" << caps.name << "'";
    EXPECT_TRUE(staged[0] && staged[1]) << "a staging path met no weight in blocks";
  }
  for (const auto& name : ran) std::printf("ran %s\n", name.c_str());
}

VKF_FOR_EACH_DTYPE(GemmCoopMatRun);

}  // namespace
}  // namespace vkf::test
