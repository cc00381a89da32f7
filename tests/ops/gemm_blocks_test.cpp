// The decode-step GEMMs over weights in llama.cpp's blocks (Gemm::b_blocks, upload_blocks)
// against a double-precision reference on the same weights dequantized on the host
// (vkformer/blocks.hpp, itself checked against the gguf package: blocks_test.cpp): every
// type, 1 to 32 rows, K of one block, several and many, N not a multiple of the kernel's
// columns, bias, activation, residual, the gated pair and a folded RMSNorm, both storage
// types, as the device is (lavapipe: gemm_columns.comp over rows interleaved in 16s, up to
// 32 rows; gemm_small_m.comp with a folded norm) and under the portable profile
// (gemm_small_m.comp over row-major blocks, no subgroups: one value at a time; more than
// 4 rows dequantized first), poisoned outputs. A kernel that read a scale from the wrong block, or the
// nibbles in the wrong order, fails here: TamperedLayoutIsCaught shows a reference with
// the nibbles swapped does not pass.
//
// Tolerance: the kernel sums d * dot(a, codes) in fp32 per block (the codes are small
// integers, exact), so each output carries a small multiple of 2^-24 of sum |a w|, checked
// at 1e-5 of it (gemm_check.hpp); fp16 storage rounds the stored result once more. A
// prompt's product reads the weight dequantized into the storage type: its reference
// takes the weights so rounded.
#include "ops/gemm_check.hpp"
#include "ops/reference.hpp"
#include "support/ops_test.hpp"
#include "vkformer/blocks.hpp"
#include "vkformer/gemm_tuning.hpp"
#include "vkformer/tensor_io.hpp"

namespace vkf::test {
namespace {

class GemmBlocksTest : public OpsTest {
 protected:
  struct Case {
    BlockType type;
    uint32_t M, N, K;
    bool glu = false, rms = false;
    Activation act = Activation::None;
    bool scratch = true;  // GemmOperands::scratch given
    std::optional<bool> texels;  // Gemm::texel_weights
  };
  // The weights as the kernel must see them: random, quantized, dequantized on the host.
  std::vector<double> weights(const Case& t, uint32_t rows, std::mt19937_64& rng, std::vector<uint8_t>& blocks) {
    std::vector<float> w(size_t(rows) * t.K);
    for (auto& x : w) x = float(random_values(1, rng, -0.5, 0.5)[0]);
    blocks = quantize_blocks(t.type, w);
    const std::vector<float> back = dequantize_blocks(t.type, blocks);
    return {back.begin(), back.end()};
  }

  void check(const Case& t, std::mt19937_64& rng) {
    const uint32_t rows_of_b = t.glu ? 2 * t.N : t.N;
    const DType dt = dtype();
    SCOPED_TRACE(std::string(block_type_name(t.type)) + " M=" + std::to_string(t.M) + " N=" + std::to_string(t.N) +
                 " K=" + std::to_string(t.K) + (t.glu ? " gated" : "") + (t.rms ? " RMSNorm" : ""));
    const uint32_t rows = t.glu ? 2 * t.N : t.N;
    std::vector<uint8_t> blocks;
    std::vector<double> W = weights(t, rows, rng, blocks);
    Gemm g{.M = t.M, .N = t.N, .K = t.K, .trans_b = true, .act = t.act, .glu = t.glu, .b_blocks = t.type};
    if (t.rms) g.norm_of = NormOf::A, g.norm_kind = NormKind::RMSNorm, g.norm_eps = 1e-5f;
    g.texel_weights = t.texels;
    // Whether a kernel reads the blocks itself: the small-M kernel up to 4 rows; on CPU
    // drivers the columns kernel without a folded norm up to 32 rows, and the direct
    // kernel past that. Else the weight is read dequantized into the storage type (fp16:
    // each value rounded once more).
    const bool direct = ops().gemm_reads_blocks(g);
    if (ctx().capabilities().type == DeviceType::Cpu && !GetParam().portable) {
      EXPECT_TRUE(direct) << "CPU drivers read every product's blocks";
      EXPECT_FALSE(ops().blocks_need_scratch());
    }
    if (!direct)
      for (auto& x : W) x = stored(x, dt);
    auto A = random_values(size_t(t.M) * t.K, rng, t.rms ? 1 : -1, t.rms ? 3 : 1);
    auto bias = random_values(rows, rng), R = random_values(size_t(t.M) * t.N, rng);
    auto gamma = random_values(t.K, rng, 0.5, 1.5);
    const std::vector<double> zeros(t.K, 0.0);
    for (auto* v : {&A, &bias, &R, &gamma})
      for (auto& x : *v) x = stored(x, dt);
    Gemm plain = g;
    plain.norm_of = NormOf::None;
    const auto input =
        t.rms ? ref::layer_norm({.rows = t.M, .cols = t.K, .eps = g.norm_eps, .kind = NormKind::RMSNorm}, A, gamma, zeros, nullptr) : A;
    const auto want = t.glu ? ref::gemm_glu(plain, input, W, &bias, &R) : ref::gemm(plain, input, W, &bias, &R);

    Context& c_ = ctx();
    Buffer a = upload_as(c_, A, dt, "A"), bb = upload_as(c_, bias, dt, "bias"), r = upload_as(c_, R, dt, "R");
    Buffer gm = upload_as(c_, gamma, dt, "gamma"), bt = upload_as(c_, zeros, dt, "beta");
    Buffer w = upload_blocks(c_, t.type, blocks, rows, t.K, "W blocks");
    Buffer c = poisoned(c_, want.c.size(), dt, "C");
    Buffer scratch = poisoned(c_, size_t(rows_of_b) * t.K, dt, "scratch");  // products of more than 4 rows
    auto cl = c_.command_list();
    ops().gemm(cl, g,
               {.a = a.view(), .b = w.view(), .c = c.view(), .bias = bb.view(), .residual = r.view(),
                .norm = t.rms ? std::optional(NormWeights{gm.view(), bt.view()}) : std::nullopt,
                .scratch = t.scratch ? std::optional(scratch.view()) : std::nullopt});
    cl.submit();
    EXPECT_TRUE(gemm_close(download_as(c_, c, want.c.size(), dt), want, dt));
    if (direct)  // the kernel that reads them names their type
      EXPECT_NE(ops().gemm_variant(g).find(block_type_name(t.type)), std::string::npos) << ops().gemm_variant(g);
  }
};

TEST_P(GemmBlocksTest, EveryTypeAgainstTheDequantizedWeights) {
  const auto seed = test_seed();
  VKF_SEED_TRACE(seed);
  std::mt19937_64 rng(seed);
  const uint32_t Ks[] = {32, 96, 544}, super_Ks[] = {256, 768};
  uint32_t i = 0;
  for (BlockType type : kBlockTypes) {
    // One row (batch-1 decoding: its own variant) and three, at a K each (K-quants: whole
    // super-blocks, one and three).
    const bool k = is_k_quant(type);
    check({.type = type, .M = 1, .N = 37, .K = k ? super_Ks[i % 2] : Ks[i % 3], .act = Activation::GeluTanh}, rng);
    check({.type = type, .M = 3, .N = 17, .K = k ? super_Ks[(i + 1) % 2] : Ks[(i + 1) % 3]}, rng);
    ++i;
  }
  // The gated pair and a folded RMSNorm (Llama's FFN up projection), four rows.
  check({.type = BlockType::Q4_0, .M = 4, .N = 33, .K = 96, .glu = true, .act = Activation::Silu}, rng);
  check({.type = BlockType::Q8_0, .M = 1, .N = 20, .K = 64, .rms = true}, rng);
}

// The decode step's kernel on CPU drivers fetches the top bits of an invocation's two
// neighbouring rows once (N even): even N with groups of 16 rows and a short one, gated
// pairs (their up rows from N on), each type with top bits, one row and two.
TEST_P(GemmBlocksTest, NeighbouringRowsShareTheirTopBits) {
  const auto seed = test_seed();
  VKF_SEED_TRACE(seed);
  std::mt19937_64 rng(seed);
  check({.type = BlockType::Q6_K, .M = 1, .N = 34, .K = 512, .glu = true, .act = Activation::Silu}, rng);
  check({.type = BlockType::Q6_K, .M = 2, .N = 50, .K = 256}, rng);
  check({.type = BlockType::Q5_K, .M = 1, .N = 18, .K = 768, .glu = true, .act = Activation::Silu}, rng);
  check({.type = BlockType::Q5_0, .M = 2, .N = 22, .K = 96}, rng);
  check({.type = BlockType::Q5_1, .M = 1, .N = 34, .K = 544, .rms = true}, rng);
}

// K-quants: 17 rows of B (a group of 16 interleaved rows and one alone: the super-blocks'
// scales follow the same order), a gated pair, two rows, a batch of 17; and rows of
// 256 k + 32 values, which llama.cpp's fallback stores in its 32-value types.
TEST_P(GemmBlocksTest, KQuantsAndTheirFallbacks) {
  const auto seed = test_seed();
  VKF_SEED_TRACE(seed);
  std::mt19937_64 rng(seed);
  check({.type = BlockType::Q4_K, .M = 2, .N = 17, .K = 512, .act = Activation::Silu}, rng);
  check({.type = BlockType::Q5_K, .M = 1, .N = 19, .K = 256, .glu = true, .act = Activation::Silu}, rng);
  check({.type = BlockType::Q6_K, .M = 17, .N = 33, .K = 512}, rng);
  check({.type = BlockType::Q6_K, .M = 2, .N = 18, .K = 256, .rms = true}, rng);
  check({.type = BlockType::Q6_K, .M = 2, .N = 35, .K = 768, .act = Activation::Gelu}, rng);
  check({.type = BlockType::Q4_K, .M = 40, .N = 20, .K = 256, .act = Activation::Gelu}, rng);  // a prompt
  for (BlockType t : {BlockType::Q4_K, BlockType::Q5_K, BlockType::Q6_K}) {
    const auto stored = block_type_for_row(t, 544);
    ASSERT_TRUE(stored && !is_k_quant(*stored)) << block_type_name(t);
    check({.type = *stored, .M = 1, .N = 21, .K = 544}, rng);
  }
  EXPECT_EQ(block_type_for_row(BlockType::Q4_K, 544), BlockType::Q5_0);
  EXPECT_EQ(block_type_for_row(BlockType::Q5_K, 544), BlockType::Q5_1);
  EXPECT_EQ(block_type_for_row(BlockType::Q6_K, 544), BlockType::Q8_0);
  EXPECT_EQ(block_type_for_row(BlockType::Q6_K, 500), std::nullopt);
}

// A batch's decode step (17 and 32 rows, each weight block read once for all of them on
// CPU drivers), the gated pair among them, and a K of many blocks.
TEST_P(GemmBlocksTest, BatchedDecodeSteps) {
  const auto seed = test_seed();
  VKF_SEED_TRACE(seed);
  std::mt19937_64 rng(seed);
  check({.type = BlockType::Q8_0, .M = 17, .N = 19, .K = 1056, .act = Activation::Gelu}, rng);
  check({.type = BlockType::Q4_0, .M = 32, .N = 35, .K = 64}, rng);
  check({.type = BlockType::Q5_1, .M = 17, .N = 21, .K = 96, .glu = true, .act = Activation::Silu}, rng);
}

// The same kernels reading the blocks from a storage buffer (texel_weights = false), as
// they do where a weight is larger than the device's texel buffers (on lavapipe they
// read texels otherwise): every type on the decode step (one row, and two: rows paired
// for their top bits), a batch, a gated pair, and a prompt's product.
TEST_P(GemmBlocksTest, WeightsReadFromAStorageBuffer) {
  const auto seed = test_seed();
  VKF_SEED_TRACE(seed);
  std::mt19937_64 rng(seed);
  uint32_t i = 0;
  for (BlockType type : kBlockTypes) {
    const uint32_t K = is_k_quant(type) ? 512 : 96;
    check({.type = type, .M = 1 + i % 2, .N = 34, .K = K, .act = Activation::Silu, .texels = false}, rng);
    ++i;
  }
  check({.type = BlockType::Q4_K, .M = 1, .N = 18, .K = 256, .glu = true, .act = Activation::Silu, .texels = false}, rng);
  check({.type = BlockType::Q6_K, .M = 17, .N = 21, .K = 256, .texels = false}, rng);
  check({.type = BlockType::Q5_0, .M = 1, .N = 19, .K = 544, .rms = true, .texels = false}, rng);
  check({.type = BlockType::Q4_K, .M = 40, .N = 20, .K = 256, .act = Activation::Gelu, .texels = false}, rng);
}

// Products of more rows (a prompt): on CPU drivers the direct kernel reading the blocks
// (a folded norm's too); elsewhere the weight dequantized into the scratch for the tiled
// kernels, with every epilogue.
TEST_P(GemmBlocksTest, PromptProductsReadTheWeightDequantized) {
  const auto seed = test_seed();
  VKF_SEED_TRACE(seed);
  std::mt19937_64 rng(seed);
  check({.type = BlockType::Q4_1, .M = 33, .N = 37, .K = 96, .act = Activation::Relu}, rng);
  check({.type = BlockType::Q5_0, .M = 40, .N = 40, .K = 64, .glu = true, .act = Activation::Silu}, rng);
  check({.type = BlockType::Q8_0, .M = 9, .N = 33, .K = 32, .rms = true}, rng);
  check({.type = BlockType::Q6_K, .M = 37, .N = 40, .K = 512, .rms = true}, rng);
  check({.type = BlockType::Q5_K, .M = 65, .N = 24, .K = 256, .glu = true, .act = Activation::Silu}, rng);
  // Without a scratch where the kernels read the blocks themselves (elsewhere: refused).
  if (ops().gemm_reads_blocks({.M = 70, .N = 8, .K = 32, .trans_b = true, .b_blocks = BlockType::Q4_0}))
    check({.type = BlockType::Q4_0, .M = 70, .N = 37, .K = 96, .act = Activation::Gelu, .scratch = false}, rng);
}

// Every tiles design a prompt's product can run here (the tuner's candidates: tiled,
// direct, split-K; the cooperative-matrix designs in GemmCoopMatRun, emulated on
// lavapipe), each over a block type in turn (two while some type has met no design yet),
// read by the kernel itself (no dequantized copy): K whole super-blocks for the K-quants,
// 256 k + 32 (their fallbacks' rows) for the others, through the tuner's own check
// (check_gemm_tiles: double reference, poisoned output).
TEST_P(GemmBlocksTest, EveryTilesDesignReadsEveryType) {
  const auto seed = test_seed();
  VKF_SEED_TRACE(seed);
  size_t i = 0;
  for (const GemmTiles& t : gemm_tile_candidates(ctx().capabilities(), dtype())) {
    if (t.strategy == GemmStrategy::CoopMatNV) continue;
    for (int twice = 0; twice < 1 + (i < std::size(kBlockTypes)); ++twice, ++i) {
      const BlockType type = kBlockTypes[i % std::size(kBlockTypes)];
      const uint32_t M = 33 + 7 * uint32_t(i % 3), N = 37, K = is_k_quant(type) ? 512 : 288;
      const Gemm g{.M = M, .N = N, .K = K, .trans_b = true, .tiles = t, .b_blocks = type};
      ASSERT_TRUE(ops().gemm_reads_blocks(g)) << t.name();
      EXPECT_NE(ops().gemm_variant(g).find(block_type_name(type)), std::string::npos) << ops().gemm_variant(g);
      const GemmCheck c = check_gemm_tiles(ctx(), dtype(), M, N, K, t, seed + i, {}, type);
      EXPECT_TRUE(c.ok) << t.name() << " over " << block_type_name(type) << " at " << M << "x" << N << "x" << K
                        << ": error " << c.error;
    }
  }
  EXPECT_GE(i, std::size(kBlockTypes)) << "fewer designs than block types: some type met none";
}

// The same reference with each byte's nibbles swapped (code j + 16 read as code j) does
// not pass: the check above sees a kernel that reads the layout wrong.
TEST_P(GemmBlocksTest, TamperedLayoutIsCaught) {
  if (dtype() != DType::F32 || GetParam().portable) GTEST_SKIP() << "once is enough";
  std::mt19937_64 rng(7);
  const uint32_t M = 1, N = 8, K = 64;
  std::vector<float> w(size_t(N) * K);
  for (auto& x : w) x = float(random_values(1, rng)[0]);
  std::vector<uint8_t> blocks = quantize_blocks(BlockType::Q4_0, w), swapped = blocks;
  for (size_t b = 0; b < swapped.size() / 18; ++b)
    for (int j = 2; j < 18; ++j) swapped[b * 18 + j] = uint8_t(swapped[b * 18 + j] << 4 | swapped[b * 18 + j] >> 4);
  const auto wrong = dequantize_blocks(BlockType::Q4_0, swapped);
  const auto A = random_values(K, rng);
  const Gemm g{.M = M, .N = N, .K = K, .trans_b = true, .b_blocks = BlockType::Q4_0};
  const auto want = ref::gemm(g, A, std::vector<double>(wrong.begin(), wrong.end()), nullptr, nullptr);
  Buffer a = upload_as(ctx(), A, DType::F32, "A"), c = poisoned(ctx(), N, DType::F32, "C");
  Buffer wb = upload_blocks(ctx(), BlockType::Q4_0, blocks, N, K, "W");
  auto cl = ctx().command_list();
  ops().gemm(cl, g, {.a = a.view(), .b = wb.view(), .c = c.view()});
  cl.submit();
  EXPECT_FALSE(gemm_close(download_as(ctx(), c, N, DType::F32), want, DType::F32));
}

// What the kernels do not read yet, and weights that do not fit, are refused by name.
TEST_P(GemmBlocksTest, RefusedByName) {
  std::vector<float> w(64 * 64, 0.5f);
  Buffer wb = upload_blocks(ctx(), BlockType::Q8_0, quantize_blocks(BlockType::Q8_0, w), 64, 64, "W");
  Buffer x = ctx().buffer(64 * 64 * 4, "x");
  auto refused = [&](const Gemm& g, const std::string& words) {
    auto cl = ctx().command_list();
    try {
      ops().gemm(cl, g, {.a = x.view(), .b = wb.view(), .c = x.view()});
      ADD_FAILURE() << "accepted: " << words;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
    }
  };
  const Gemm prompt{.M = 33, .N = 64, .K = 64, .trans_b = true, .norm_of = NormOf::A, .b_blocks = BlockType::Q8_0};
  if (!ops().gemm_reads_blocks(prompt)) refused(prompt, "give GemmOperands::scratch");
  refused({.M = 1, .N = 1, .K = 288, .trans_b = true, .b_blocks = BlockType::Q4_K}, "K a multiple of 256");
  refused({.M = 1, .N = 64, .K = 48, .trans_b = true, .b_blocks = BlockType::Q8_0}, "K a multiple of 32");
  refused({.M = 1, .N = 64, .K = 64, .b_blocks = BlockType::Q8_0}, "Linear weight");
  refused({.M = 1, .N = 128, .K = 64, .trans_b = true, .b_blocks = BlockType::Q8_0}, "needs 8704 bytes");
  EXPECT_THROW(upload_blocks(ctx(), BlockType::Q8_0, std::vector<uint8_t>(33), 1, 32, "W"), Error);
  // A scale or minimum that is infinite or NaN: refused with the block's place.
  for (auto [type, at, bits] : {std::tuple{BlockType::Q8_0, 0, 0x7C00}, std::tuple{BlockType::Q4_0, 0, 0x7E00},
                                std::tuple{BlockType::Q4_1, 2, 0xFC00}}) {
    std::vector<float> v(2 * 64, 0.25f);
    std::vector<uint8_t> b = quantize_blocks(type, v);
    const size_t block = 3 * block_bytes(type) + at;  // row 1, block 1
    b[block] = uint8_t(bits), b[block + 1] = uint8_t(bits >> 8);
    try {
      upload_blocks(ctx(), type, b, 2, 64, "W");
      ADD_FAILURE() << block_type_name(type) << ": a non-finite scale accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("W: block 1 of row 1 has a ") + (at ? "minimum" : "scale") +
                                           " that is infinite or not a number"),
                std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(upload_blocks(ctx(), BlockType::Q8_0, std::vector<uint8_t>(34), 1, 31, "W"), Error);
  // K-quants: a super-block's d (Q6_K's after its codes) or dmin.
  for (auto [type, at, what] : {std::tuple{BlockType::Q4_K, 2, "minimum"}, std::tuple{BlockType::Q5_K, 0, "scale"},
                                std::tuple{BlockType::Q6_K, 208, "scale"}}) {
    std::vector<float> v(2 * 256, 0.25f);
    std::vector<uint8_t> b = quantize_blocks(type, v);
    b[block_bytes(type) + at] = 0x00, b[block_bytes(type) + at + 1] = 0x7C;  // row 1's super-block: infinity
    try {
      upload_blocks(ctx(), type, b, 2, 256, "W");
      ADD_FAILURE() << block_type_name(type) << ": a non-finite scale accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("W: block 0 of row 1 has a ") + what), std::string::npos)
          << e.what();
    }
  }
  EXPECT_THROW(upload_blocks(ctx(), BlockType::Q4_K, std::vector<uint8_t>(144), 1, 288, "W"), Error);
}

VKF_FOR_EACH_DTYPE(GemmBlocksTest);

}  // namespace
}  // namespace vkf::test
