// Gated products (Gemm::glu, FLAG_GLU: Llama's SwiGLU as the up projection's epilogue)
// against the double reference: the plain product of 2N columns, then act(gate) * up
// (+ residual). Every kernel that pairs gates with ups (the decode-step kernel with
// buffers and texels, the direct and tiled kernels, every tuner candidate that can),
// awkward shapes, both storage types, bias, residual and a folded RMSNorm, poisoned
// outputs; tiles that cannot pair them are refused by name.
//
// Tolerance: the gate's and the up's sums carry gemm_test's fp32 error (a small multiple
// of 2^-24 of sum |a b|); the product scales each by the other's magnitude
// (ref::gemm_glu's scale), checked at 1e-5 of it. fp16 storage rounds the stored result
// once: 1e-3 of |c|.
#include "ops/gemm_check.hpp"
#include "ops/reference.hpp"
#include "support/ops_test.hpp"
#include "vkformer/gemm_tuning.hpp"

namespace vkf::test {
namespace {

class GemmGluTest : public OpsTest {
 protected:
  // One gated product of M rows, N outputs (B [2N, K]), `batch` items sharing B, with a
  // bias and a residual, an RMSNorm of A folded in when `rms`.
  void check(uint32_t M, uint32_t N, uint32_t K, std::mt19937_64& rng, std::optional<GemmTiles> tiles = {},
             std::optional<bool> texels = {}, bool rms = false, Activation act = Activation::Silu, uint32_t batch = 1,
             SmallMReads reads = SmallMReads::Default) {
    const DType dt = dtype();
    SCOPED_TRACE("M=" + std::to_string(M) + " N=" + std::to_string(N) + " K=" + std::to_string(K) +
                 (tiles ? " " + tiles->name() : "") + (texels ? (*texels ? " texels" : " buffers") : "") +
                 (rms ? " RMSNorm" : "") + " batch " + std::to_string(batch));
    Gemm g{.M = M, .N = N, .K = K, .trans_b = true, .alpha = 0.75f, .act = act, .batch = batch, .glu = true,
           .tiles = tiles};
    g.texel_weights = texels;
    if (reads != SmallMReads::Default) force(g, reads);
    g.stride_a = {uint64_t(M) * K, 0};
    g.stride_c = g.stride_r = {uint64_t(M) * N, 0};
    auto A = random_values(size_t(batch) * M * K, rng, rms ? 1 : -1, rms ? 3 : 1);
    auto W = random_values(size_t(2) * N * K, rng), bias = random_values(2 * N, rng);
    auto R = random_values(size_t(batch) * M * N, rng), gamma = random_values(K, rng, 0.5, 1.5);
    const std::vector<double> zeros(K, 0.0);
    for (auto* v : {&A, &W, &bias, &R, &gamma})
      for (auto& x : *v) x = stored(x, dt);
    if (rms) {
      g.norm_of = NormOf::A;
      g.norm_kind = NormKind::RMSNorm;
      g.norm_eps = 1e-5f;
    }
    Gemm plain = g;
    plain.norm_of = NormOf::None;
    const auto normed =
        rms ? ref::layer_norm({.rows = batch * M, .cols = K, .eps = g.norm_eps, .kind = NormKind::RMSNorm}, A, gamma, zeros, nullptr)
            : A;
    const auto want = ref::gemm_glu(plain, normed, W, &bias, &R);

    Context& c_ = ctx();
    Buffer a = upload_as(c_, A, dt, "A"), w = upload_as(c_, W, dt, "W"), bb = upload_as(c_, bias, dt, "bias");
    Buffer r = upload_as(c_, R, dt, "R"), gm = upload_as(c_, gamma, dt, "gamma"), bt = upload_as(c_, zeros, dt, "beta");
    Buffer c = poisoned(c_, want.c.size(), dt, "C");
    Ops o = ops();
    auto cl = c_.command_list();
    o.gemm(cl, g,
           {.a = a.view(),
            .b = w.view(),
            .c = c.view(),
            .bias = bb.view(),
            .residual = r.view(),
            .norm = rms ? std::optional(NormWeights{gm.view(), bt.view()}) : std::nullopt});
    cl.submit();
    EXPECT_TRUE(gemm_close(download_as(c_, c, want.c.size(), dt), want, dt));
  }
};

// The default table's kernels at awkward shapes: 1 to 4 rows take the decode-step
// kernel (texels where they can be read so, buffers otherwise), more the direct or tiled one.
TEST_P(GemmGluTest, AwkwardShapesWithBiasResidualAndFoldedRmsNorm) {
  auto seed = test_seed();
  VKF_SEED_TRACE(seed);
  std::mt19937_64 rng(seed);
  const uint32_t shapes[][3] = {{1, 1, 1},    {1, 3, 16},   {2, 17, 24},  {3, 255, 64}, {4, 1000, 40},
                                {1, 1029, 64}, {1, 9, 12},  {5, 67, 45},  {17, 3, 1000}, {24, 255, 64},
                                {33, 70, 17}, {130, 129, 33}, {255, 17, 1}, {1030, 40, 12}};
  for (auto& s : shapes) {
    check(s[0], s[1], s[2], rng);
    check(s[0], s[1], s[2], rng, {}, {}, true);  // with Llama's folded RMSNorm
  }
  check(3, 100, 64, rng, {}, {}, false, Activation::Gelu, 2);  // GeGLU-like, two items sharing B
  check(40, 100, 64, rng, {}, {}, true, Activation::Silu, 2);
}

// The decode-step kernel's three ways of reading, each forced where it runs.
TEST_P(GemmGluTest, DecodeStepKernelFromBuffersTexelsAndAddresses) {
  auto seed = test_seed();
  VKF_SEED_TRACE(seed);
  std::mt19937_64 rng(seed);
  for (SmallMReads reads : {SmallMReads::Buffers, SmallMReads::Texels, SmallMReads::Addresses}) {
    Gemm probe{.M = 1, .N = 8, .K = 64, .trans_b = true};
    force(probe, reads);
    try {
      if (ops().gemm_variant(probe) != variant_of(reads)) continue;
    } catch (const Error&) {
      continue;  // (gemm_test.cpp checks the refusals)
    }
    SCOPED_TRACE(variant_of(reads));
    for (uint32_t M : {1u, 2u, 4u}) {
      check(M, 1029, 64, rng, {}, {}, false, Activation::Silu, 1, reads);
      check(M, 5, 512, rng, {}, {}, true, Activation::Silu, 1, reads);
      check(M, 37, 2048, rng, {}, {}, false, Activation::Silu, 1, reads);  // 8 columns a subgroup on CPU drivers: 4 gates, 4 ups
    }
  }
}

// Every tuner candidate that can pair gates with ups runs a gated product; the others
// (odd TN, split-K, the cooperative-matrix kernel) are refused by name when forced, and
// give way to the default table's tiles when only tuned.
TEST_P(GemmGluTest, EveryTunerCandidateThatCanPairColumnsAndTheRestRefused) {
  auto seed = test_seed();
  VKF_SEED_TRACE(seed);
  std::mt19937_64 rng(seed);
  uint32_t ran = 0, i = 0;
  for (const GemmTiles& t : gemm_tile_candidates(ctx().capabilities(), dtype())) {
    if (const std::string why = gemm_glu_problem(t); !why.empty()) {
      Buffer x = ctx().buffer(64 * 64 * 4, "x");
      auto cl = ctx().command_list();
      try {
        ops().gemm(cl, {.M = 37, .N = 8, .K = 8, .trans_b = true, .glu = true, .tiles = t},
                   {.a = x.view(), .b = x.view(), .c = x.view()});
        ADD_FAILURE() << t.name() << " ran a gated product";
      } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
      }
      continue;
    }
    const bool rms = i % 3 == 0 && gemm_norm_fold_problem(ctx().capabilities(), t).empty();  // where it can fold too
    check(37, 70, i++ % 2 ? 45 : 64, rng, t, {}, rms);
    ++ran;
  }
  EXPECT_GT(ran, 0u);
}

TEST_P(GemmGluTest, MisuseIsAClearError) {
  Buffer x = ctx().buffer(1 << 16, "x");
  Ops o = ops();
  auto cl = ctx().command_list();
  auto expect = [&](const Gemm& g, const std::string& words, std::optional<BufferView> split = {},
                    std::optional<BufferView> bias = {}) {
    try {
      o.gemm(cl, g, {.a = x.view(), .b = x.view(), .c = x.view(), .bias = bias, .split_out = split});
      ADD_FAILURE() << "accepted: " << words;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
    }
  };
  expect({.M = 8, .N = 8, .K = 8, .glu = true}, "Linear weight [2N, K]");
  Gemm split{.M = 8, .N = 8, .K = 8, .trans_b = true, .glu = true};
  split.split.column = 4;
  expect(split, "no split output", x.view());
  // B must hold 2N rows, the bias 2N values.
  Buffer b = ctx().buffer(uint64_t(8) * 8 * dtype_bytes(dtype()), "B with N rows");
  try {
    o.gemm(cl, {.M = 8, .N = 8, .K = 8, .trans_b = true, .glu = true}, {.a = x.view(), .b = b.view(), .c = x.view()});
    ADD_FAILURE() << "a weight of N rows accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("B"), std::string::npos) << e.what();
  }
  Buffer bias = ctx().buffer(8 * dtype_bytes(dtype()), "bias of N");
  expect({.M = 8, .N = 8, .K = 8, .trans_b = true, .glu = true}, "bias", std::nullopt, bias.view());
  const GemmTiles odd{8, 64, 4, 8, 1, GemmStrategy::Direct};
  EXPECT_NE(gemm_glu_problem(odd), "");
  EXPECT_NE(gemm_glu_problem({64, 64, 32, 32, 32, GemmStrategy::CoopMatNV}), "");
  GemmTiles split_k{32, 64, 16, 4, 8};
  split_k.split_k = 4;
  EXPECT_NE(gemm_glu_problem(split_k), "");
  EXPECT_EQ(gemm_glu_problem({32, 64, 16, 4, 8}), "");
}

VKF_FOR_EACH_DTYPE(GemmGluTest);

}  // namespace
}  // namespace vkf::test
