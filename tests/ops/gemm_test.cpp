// GEMM against a double-precision reference at awkward shapes, both storage types,
// every transpose and epilogue.
//
// Tolerance: the GPU accumulates in fp32 with fma, so each output's error is bounded
// by a small multiple of 2^-24 * sum_k |a_k b_k| (rounding grows with the magnitudes
// summed, not with the result, which may cancel to ~0); 1e-5 of that sum leaves room
// for K up to a few thousand in the worst case and ~100x margin in the typical one.
// fp16 storage rounds the stored result once more: 2^-11 = 4.9e-4 of |c|, so 1e-3.
#include "support/ops_test.hpp"
#include "ops/gemm_check.hpp"
#include "ops/reference.hpp"
#include "vkformer/blocks.hpp"
#include "vkformer/gemm_tuning.hpp"
#include "vkformer/tensor_io.hpp"

#include <set>

namespace vkf::test {
namespace {

class GemmTest : public OpsTest {
 protected:
  void check(const Gemm& g, bool with_bias, bool with_residual, std::mt19937_64& rng) {
    SCOPED_TRACE("M=" + std::to_string(g.M) + " N=" + std::to_string(g.N) + " K=" + std::to_string(g.K) +
                 (g.trans_a ? " transA" : "") + (g.trans_b ? " transB" : "") + " act=" + std::to_string(int(g.act)) +
                 " batch=" + std::to_string(g.batch) + "x" + std::to_string(g.heads));
    auto extent = [&](const Strides& s, uint64_t rows, uint64_t ld) {
      return (g.batch - 1) * s.outer + (g.heads - 1) * s.inner + rows * ld;
    };
    const uint32_t lda = g.lda ? g.lda : (g.trans_a ? g.M : g.K), ldb = g.ldb ? g.ldb : (g.trans_b ? g.K : g.N);
    auto A = random_values(extent(g.stride_a, g.trans_a ? g.K : g.M, lda), rng);
    auto B = random_values(extent(g.stride_b, g.trans_b ? g.N : g.K, ldb), rng);
    auto bias = random_values(g.N, rng);
    auto R = random_values(extent(g.stride_r, g.M, g.ldr ? g.ldr : g.N), rng);
    for (auto* v : {&A, &B, &bias, &R})
      for (auto& x : *v) x = stored(x, dtype());
    auto want = ref::gemm(g, A, B, with_bias ? &bias : nullptr, with_residual ? &R : nullptr);

    Buffer a = upload_as(ctx(), A, dtype(), "A"), b = upload_as(ctx(), B, dtype(), "B");
    Buffer bb = upload_as(ctx(), bias, dtype(), "bias"), r = upload_as(ctx(), R, dtype(), "R");
    Buffer c = poisoned(ctx(), want.c.size(), dtype(), "C");
    auto cl = ctx().command_list();
    Ops o = ops();
    o.gemm(cl, g,
           {.a = a.view(),
            .b = b.view(),
            .c = c.view(),
            .bias = with_bias ? std::optional(bb.view()) : std::nullopt,
            .residual = with_residual ? std::optional(r.view()) : std::nullopt});
    cl.submit();
    // Elements outside every output matrix (gaps between strided batches) stay NaN.
    EXPECT_TRUE(gemm_close(download_as(ctx(), c, want.c.size(), dtype()), want, dtype()));
  }

  // One folded-norm product against LN then GEMM in double, on fresh random rows.
  void check_folded_norm(uint32_t M, uint32_t N, uint32_t K, NormOf where, std::optional<GemmTiles> tiles,
                         std::mt19937_64& rng, std::optional<bool> texels = std::nullopt, bool rms = false,
                         std::optional<SmallMReads> reads = std::nullopt) {
    const DType dt = dtype();
    const uint32_t batch = 2;
    SCOPED_TRACE("M=" + std::to_string(M) + " N=" + std::to_string(N) + " K=" + std::to_string(K) +
                 (where == NormOf::A ? " norm of A" : " norm of the residual") + (tiles ? " " + tiles->name() : "") +
                 (rms ? " RMSNorm" : ""));
    Gemm g{.M = M, .N = N, .K = K, .trans_b = true, .act = Activation::Relu, .batch = batch, .tiles = tiles};
    g.texel_weights = texels;
    if (reads) force(g, *reads);
    g.stride_a = {uint64_t(M) * K, 0};
    g.stride_c = g.stride_r = {uint64_t(M) * N, 0};
    g.norm_of = where;
    g.norm_eps = 1e-5f;
    g.norm_kind = rms ? NormKind::RMSNorm : NormKind::LayerNorm;
    const uint32_t cols = where == NormOf::A ? K : N;
    auto A = random_values(size_t(batch) * M * K, rng, 1, 3), W = random_values(size_t(N) * K, rng);
    auto bias = random_values(N, rng), R = random_values(size_t(batch) * M * N, rng, 1, 3);
    auto gamma = random_values(cols, rng, 0.5, 1.5), beta = random_values(cols, rng);
    if (rms) beta.assign(cols, 0.0);  // an RMSNorm's fold is given zeros as its beta
    for (auto* v : {&A, &W, &bias, &R, &gamma, &beta})
      for (auto& x : *v) x = stored(x, dt);
    const LayerNorm ln{.rows = batch * M, .cols = cols, .eps = g.norm_eps, .kind = rms ? NormKind::RMSNorm : NormKind::LayerNorm};
    Gemm plain = g;
    plain.norm_of = NormOf::None;
    auto want = where == NormOf::A ? ref::gemm(plain, ref::layer_norm(ln, A, gamma, beta, nullptr), W, &bias, &R)
                                   : ref::gemm(plain, A, W, &bias, &R);
    if (where == NormOf::A) {
      // A row of close values (K = 3 draws near each other) has a small std, and its
      // normalised values' fp32 rounding grows with (|a| + |mean|) rstd |gamma|, not with
      // |LN(a)|: the products' scale takes that through |W| (seen: 2x1000x3, seed
      // 221217695, an error of 1.1 times 1e-5 of sum |LN(a) w| alone).
      Gemm magnitudes = plain;
      magnitudes.act = Activation::None;
      std::vector<double> abs_w(W);
      for (double& x : abs_w) x = std::abs(x);
      const auto extra = ref::gemm(magnitudes, ref::layer_norm_rounding_scale(ln, A, gamma, beta), abs_w, nullptr, nullptr);
      for (size_t i = 0; i < want.scale.size(); ++i) want.scale[i] += extra.c[i];
    }
    std::vector<double> normed_r;  // R is [M, N]: only the residual fold normalises it (cols = N)
    if (where == NormOf::Residual) normed_r = ref::layer_norm(ln, R, gamma, beta, nullptr);
    auto want_r = where == NormOf::Residual ? ref::gemm(plain, A, W, &bias, &normed_r) : want;
    if (where == NormOf::Residual) {
      // A normalised residual element may cancel to near 0 while its fp32 rounding grows
      // with its terms (about 10 here, where |LN(r)| may be 0.01: seen at 255x17x1, 6e-7).
      const auto r_scale = ref::layer_norm_rounding_scale(ln, R, gamma, beta);
      for (size_t i = 0; i < r_scale.size(); ++i) want_r.scale[i] += r_scale[i];
    }
    Context& c_ = ctx();
    Buffer a = upload_as(c_, A, dt, "A"), w = upload_as(c_, W, dt, "W");
    Buffer bb = upload_as(c_, bias, dt, "bias"), r = upload_as(c_, R, dt, "R");
    Buffer gm = upload_as(c_, gamma, dt, "gamma"), bt = upload_as(c_, beta, dt, "beta");
    Buffer c = poisoned(c_, want_r.c.size(), dt, "C");
    Ops o = ops();
    auto cl = c_.command_list();
    o.gemm(cl, g,
           {.a = a.view(),
            .b = w.view(),
            .c = c.view(),
            .bias = bb.view(),
            .residual = r.view(),
            .norm = NormWeights{gm.view(), bt.view()}});
    cl.submit();
    EXPECT_TRUE(gemm_close(download_as(c_, c, want_r.c.size(), dt), want_r, dt));
  }
};

// Ops::gemm_normed: C as gemm() writes it and y = LN(C) (or RMSNorm) beside it, in the
// product's own dispatch where the decode-step kernel runs with subgroups (the last
// workgroup to finish normalises the rows), else with a layer_norm after it. C against
// the double reference; y against LN in double of the C the device stored (so the
// check is of the norm alone, with layer_norm_test's tolerance). Each list runs twice
// with y re-poisoned in between: the kernel's ticket must be back at zero for the
// second run to normalise again.
TEST_P(GemmTest, NormedOutputInTheProductsDispatchOrAfterIt) {
  auto seed = test_seed();
  VKF_SEED_TRACE(seed);
  std::mt19937_64 rng(seed);
  const DType dt = dtype();
  const Capabilities& caps = ctx().capabilities();
  const bool fused_here = caps.subgroup_basic && caps.subgroup_arithmetic && caps.min_subgroup_size == caps.max_subgroup_size;
  const uint32_t shapes[][3] = {{1, 1, 8}, {1, 3, 17}, {2, 17, 64}, {3, 255, 24}, {4, 1029, 32}, {1, 512, 512}, {5, 33, 16}};
  for (auto& sh : shapes)
    for (bool rms : {false, true}) {
      const uint32_t M = sh[0], N = sh[1], K = sh[2];
      SCOPED_TRACE("M=" + std::to_string(M) + " N=" + std::to_string(N) + " K=" + std::to_string(K) +
                   (rms ? " RMSNorm" : " LayerNorm"));
      Gemm g{.M = M, .N = N, .K = K, .trans_b = true, .act = N % 2 ? Activation::Gelu : Activation::None,
             .norm_eps = 1e-5f, .norm_kind = rms ? NormKind::RMSNorm : NormKind::LayerNorm};
      // LayerNorms read A and B as the kernel chooses (through addresses on CPU drivers
      // with hardware gathers), RMSNorms as texels where they can be: each way ends in the norm.
      if (rms && M <= 4 && fused_here && caps.storage_texel_reads && K % (16 / dtype_bytes(dt)) == 0)
        force(g, SmallMReads::Texels);
      auto A = random_values(size_t(M) * K, rng), W = random_values(size_t(N) * K, rng);
      auto bias = random_values(N, rng), R = random_values(size_t(M) * N, rng, 2, 4);  // a mean far from 0
      auto gamma = random_values(N, rng, 0.5, 1.5), beta = random_values(N, rng);
      if (rms) beta.assign(N, 0.0);
      for (auto* v : {&A, &W, &bias, &R, &gamma, &beta})
        for (auto& x : *v) x = stored(x, dt);
      const auto want = ref::gemm(g, A, W, &bias, &R);
      Buffer a = upload_as(ctx(), A, dt, "A"), w = upload_as(ctx(), W, dt, "W"), bb = upload_as(ctx(), bias, dt, "bias");
      Buffer r = upload_as(ctx(), R, dt, "R"), gm = upload_as(ctx(), gamma, dt, "gamma"), bt = upload_as(ctx(), beta, dt, "beta");
      Buffer c = poisoned(ctx(), want.c.size(), dt, "C"), y = poisoned(ctx(), want.c.size(), dt, "y");
      Buffer tickets = upload_u32(ctx(), {0u}, "tickets");
      auto cl = ctx().command_list();
      ops().gemm_normed(
          cl, g, {.a = a.view(), .b = w.view(), .c = c.view(), .bias = bb.view(), .residual = r.view()},
          {.weights = {gm.view(), rms ? gm.view() : bt.view()}, .out = y.view(), .tickets = tickets.view()});
      EXPECT_EQ(cl.stats().dispatches, fused_here && M <= Ops::kMaxFoldedNormRows ? 1u : 2u);
      for (int run = 0; run < 2; ++run) {
        SCOPED_TRACE(run ? "second run" : "first run");
        if (run) {
          Buffer fresh = poisoned(ctx(), want.c.size(), dt, "poison");
          auto copy = ctx().command_list();
          copy.copy(fresh.view(), y.view());
          copy.submit();
        }
        cl.submit();
        const auto got_c = download_as(ctx(), c, want.c.size(), dt);
        EXPECT_TRUE(gemm_close(got_c, want, dt));
        const LayerNorm ln{.rows = M, .cols = N, .eps = g.norm_eps, .kind = rms ? NormKind::RMSNorm : NormKind::LayerNorm};
        const auto want_y = ref::layer_norm(ln, got_c, gamma, beta, nullptr);
        const auto scale = ref::layer_norm_rounding_scale(ln, got_c, gamma, beta);
        std::vector<double> s(scale.size());
        for (size_t i = 0; i < s.size(); ++i) s[i] = scale[i] + (dt == DType::F16 ? 100 * std::abs(want_y[i]) : 0);
        EXPECT_TRUE(close(download_as(ctx(), y, want.c.size(), dt), want_y, s, 1e-5, dt == DType::F16 ? 6e-8 : 0));
        EXPECT_EQ(download_u32(ctx(), tickets, 1)[0], 0u) << "the last workgroup resets its ticket";
      }
    }
  // What it refuses, by name: a batch, and C rows that are not N apart.
  Buffer any = ctx().buffer(1 << 16, "any");
  auto cl = ctx().command_list();
  const OutputNorm n{.weights = {any.view(), any.view()}, .out = any.view(), .tickets = any.view()};
  Gemm batched{.M = 1, .N = 8, .K = 8, .trans_b = true, .batch = 2};
  batched.stride_a = {8, 0};
  batched.stride_c = {8, 0};
  Gemm strided{.M = 2, .N = 8, .K = 8, .trans_b = true, .ldc = 16};
  for (const Gemm& bad : {batched, strided}) {
    try {
      ops().gemm_normed(cl, bad, {.a = any.view(), .b = any.view(), .c = any.view()}, n);
      ADD_FAILURE() << "gemm_normed accepted what it cannot do";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("gemm_normed"), std::string::npos) << e.what();
    }
  }
}

TEST_P(GemmTest, AwkwardShapesAllTransposes) {
  auto seed = test_seed();
  VKF_SEED_TRACE(seed);
  std::mt19937_64 rng(seed);
  const uint32_t shapes[][3] = {{1, 1, 1},   {3, 5, 7},     {17, 3, 1},   {1, 255, 17}, {4, 1000, 33},
                                {255, 17, 64}, {65, 129, 255}, {130, 70, 1}, {2, 3, 1001}, {1023, 40, 9}};
  for (auto& s : shapes)
    for (int t = 0; t < 4; ++t) {
      Gemm g{.M = s[0], .N = s[1], .K = s[2], .trans_a = bool(t & 1), .trans_b = bool(t & 2)};
      check(g, false, false, rng);
    }
}

// Every row class of the default table (lib/ops/gemm_default_table.cpp: on CPU drivers the direct
// kernel's 8 rows up to 64, 16 above; on GPUs and the portable profile by tile count), at the
// edges of each class, with the vec4 path (K a multiple of 4) and the scalar one, and
// the epilogues, so no variant the table can pick goes untested on this device.
TEST_P(GemmTest, EveryRowClassOfTheDefaultTable) {
  auto seed = test_seed();
  VKF_SEED_TRACE(seed);
  std::mt19937_64 rng(seed);
  std::set<std::string> variants;
  for (uint32_t M : {5u, 17u, 24u, 31u, 32u, 33u, 63u, 64u, 65u, 129u})
    for (auto [N, K] : {std::pair{3u, 17u}, std::pair{129u, 64u}, std::pair{257u, 255u}}) {
      Gemm g{.M = M, .N = N, .K = K, .trans_b = true, .act = M % 2 ? Activation::Gelu : Activation::None};
      variants.insert(ops().gemm_variant(g));
      check(g, true, M % 3 == 0, rng);
    }
  if (ctx().capabilities().type == DeviceType::Cpu)  // (GPU classes go by tile count: these small products take one)
    EXPECT_GE(variants.size(), 2u) << "the row classes should reach more than one variant";
}

// Every variant the tuner may pick on this device (include/vkformer/gemm_tuning.hpp:
// tiled and direct, with and without shuffled rows), with every transpose, the vec4 and
// scalar loads, each epilogue and batched head strides: a tuned table can only hold
// variants that ran here.
TEST_P(GemmTest, EveryTunerCandidateWithEveryTransposeEpilogueAndBatch) {
  auto seed = test_seed();
  VKF_SEED_TRACE(seed);
  std::mt19937_64 rng(seed);
  for (const GemmTiles& t : gemm_tile_candidates(ctx().capabilities(), dtype())) {
    SCOPED_TRACE(t.name());
    for (int tr = 0; tr < 4; ++tr)
      check({.M = 19, .N = 70, .K = 33, .trans_a = bool(tr & 1), .trans_b = bool(tr & 2), .act = Activation::Gelu,
             .tiles = t},
            true, tr % 2 == 1, rng);
    check({.M = 24, .N = 67, .K = 64, .trans_b = true, .alpha = 0.5f, .act = Activation::Silu, .tiles = t}, true, true,
          rng);
    const uint32_t B = 2, H = 3, L = 17, S = 9, d = 12;
    Gemm g{.M = L, .N = S, .K = d, .trans_b = true, .alpha = 0.35f, .lda = H * d, .ldb = H * d, .batch = B, .heads = H,
           .tiles = t};
    g.stride_a = {uint64_t(L) * H * d, d};
    g.stride_b = {uint64_t(S) * H * d, d};
    g.stride_c = {uint64_t(H) * L * S, uint64_t(L) * S};
    check(g, false, false, rng);
  }
}

TEST_P(GemmTest, EpiloguesBiasActivationResidual) {
  auto seed = test_seed();
  VKF_SEED_TRACE(seed);
  std::mt19937_64 rng(seed);
  for (Activation act :
       {Activation::None, Activation::Relu, Activation::Gelu, Activation::GeluTanh, Activation::Silu, Activation::Tanh})
    for (uint32_t m : {1u, 3u, 70u}) {
      Gemm g{.M = m, .N = 67, .K = 45, .trans_b = true, .alpha = 0.7f, .act = act};
      // reach the tails: GELU's and SiLU's left tails are tiny values that must keep their relative precision
      g.alpha = act == Activation::Gelu || act == Activation::Silu ? 4.0f : 0.7f;
      check(g, true, true, rng);
      check(g, true, false, rng);
      check(g, false, true, rng);
    }
}

TEST_P(GemmTest, LargeProductAndLongK) {
  auto seed = test_seed();
  VKF_SEED_TRACE(seed);
  std::mt19937_64 rng(seed);
  check({.M = 300, .N = 257, .K = 1030, .trans_b = true}, true, false, rng);
  check({.M = 1, .N = 1500, .K = 2049, .trans_b = true}, true, false, rng);  // decode step
  check({.M = 2, .N = 1003, .K = 700}, false, true, rng);
  check({.M = 130, .N = 200, .K = 512, .trans_b = true, .act = Activation::Gelu}, true, true, rng);  // vec4 loads
}

// The decode-step kernel's three ways of reading A and B: storage buffers, storage
// texel buffers (the default on CPU drivers where both start and end on whole 16-byte
// texels) and buffer addresses (the default before texels on CPU drivers with hardware
// gathers), each forced where it can run: M = 1 to 4, awkward N, K on whole 16-byte
// units in both precisions (multiples of 8) or in fp32 only (of 4), every epilogue,
// batched items sharing one weight, the folded norms; a forced way refused by name
// where B is not on whole units, the device lacks the kernel's subgroups (the portable
// profile) or its buffer addresses, or a quirk disables its texel reads.
TEST_P(GemmTest, SmallMReadsAAndBFromBuffersTexelsOrAddresses) {
  auto seed = test_seed();
  VKF_SEED_TRACE(seed);
  std::mt19937_64 rng(seed);
  Ops o = ops();
  const auto& caps = ctx().capabilities();
  const uint32_t per_unit = 16 / dtype_bytes(dtype());
  const bool subgroups = !GetParam().portable && caps.subgroup_arithmetic;
  const bool trusted = caps.storage_texel_reads;  // false: a driver quirk (quirks.cpp)
  Gemm probe{.M = 1, .N = 8, .K = 64, .trans_b = true};
  if (caps.type == DeviceType::Cpu && subgroups)
    EXPECT_EQ(o.gemm_variant(probe),
              caps.buffer_device_address && caps.shader_int64 && caps.hardware_gathers && dtype() == DType::F32
                  ? "small_m addresses"
              : trusted                                                                    ? "small_m texels"
                                                                                           : "small_m")
        << "CPU drivers read the decode step's fp32 weights through addresses where their host gathers in hardware, "
           "else as texels unless a quirk says their texel reads are wrong";
  // Forced, each way runs wherever the kernel has its subgroups and the device what it
  // reads with (GPUs too, where buffers are the default), and is refused by name elsewhere.
  auto runs = [&](SmallMReads r) {
    Gemm g = probe;
    force(g, r);
    try {
      return o.gemm_variant(g) == variant_of(r);
    } catch (const Error&) {
      return false;
    }
  };
  EXPECT_EQ(runs(SmallMReads::Texels), subgroups && trusted);
  EXPECT_EQ(runs(SmallMReads::Addresses), subgroups && caps.buffer_device_address && caps.shader_int64);
  // K >= 2048: 8 columns a subgroup on CPU drivers (lib/ops/gemm.cpp), 4 elsewhere.
  const uint32_t shapes[][3] = {{1, 1, 8},     {1, 3, 16}, {2, 17, 24},   {3, 255, 64},  {4, 1000, 40},
                                {1, 1029, 512}, {1, 9, 12}, {1, 67, 2048}, {3, 37, 2056}};
  for (SmallMReads reads : {SmallMReads::Buffers, SmallMReads::Texels, SmallMReads::Addresses}) {
    SCOPED_TRACE(variant_of(reads));
    const bool forced = reads != SmallMReads::Buffers;
    if (!runs(reads)) {  // refused by name
      Buffer any = ctx().buffer(1 << 16, "any");
      auto cl = ctx().command_list();
      Gemm g = probe;
      force(g, reads);
      try {
        o.gemm(cl, g, {.a = any.view(), .b = any.view(), .c = any.view()});
        ADD_FAILURE() << "read as " << variant_of(reads) << " where it cannot run";
      } catch (const Error& e) {
        const std::string why = e.what();
        if (reads == SmallMReads::Texels && !trusted && subgroups) EXPECT_NE(why.find("driver quirk"), std::string::npos) << why;
        if (reads == SmallMReads::Addresses && !caps.buffer_device_address && subgroups)
          EXPECT_NE(why.find("bufferDeviceAddress"), std::string::npos) << why;
        if (reads == SmallMReads::Addresses && !caps.shader_int64 && subgroups)
          EXPECT_NE(why.find("shaderInt64"), std::string::npos) << why;
        EXPECT_NE(why.find(reads == SmallMReads::Texels ? "as texels" : "through buffer addresses"), std::string::npos) << why;
      }
      continue;
    }
    for (auto& sh : shapes) {
      Gemm g{.M = sh[0], .N = sh[1], .K = sh[2], .trans_b = true, .act = sh[1] % 2 ? Activation::Gelu : Activation::None};
      force(g, reads);
      if (forced && sh[2] % per_unit) {  // K not on whole units: refused when forced, buffers by default
        Buffer any = ctx().buffer(1 << 16, "any");
        auto cl = ctx().command_list();
        try {
          o.gemm(cl, g, {.a = any.view(), .b = any.view(), .c = any.view()});
          ADD_FAILURE() << "K = " << sh[2] << " read in 16-byte units";
        } catch (const Error& e) {
          EXPECT_NE(std::string(e.what()).find(reads == SmallMReads::Texels ? "cannot be read as texels"
                                                                            : "cannot be read through buffer addresses"),
                    std::string::npos)
              << e.what();
        }
        force(g, SmallMReads::Default);
        EXPECT_EQ(o.gemm_variant(g), "small_m");
        check(g, true, true, rng);
        continue;
      }
      check(g, true, sh[0] % 2 == 1, rng);
      check(g, false, false, rng);
      Gemm batched = g;  // two items, one weight
      batched.batch = 2;
      batched.stride_a = {uint64_t(g.M) * g.K, 0};
      batched.stride_c = batched.stride_r = {uint64_t(g.M) * g.N, 0};
      check(batched, true, true, rng);
      if (sh[0] <= 4) {
        check_folded_norm(sh[0], sh[1], sh[2], NormOf::A, std::nullopt, rng, std::nullopt, false, reads);
        check_folded_norm(sh[0], sh[1], sh[2], NormOf::Residual, std::nullopt, rng, std::nullopt, false, reads);
      }
    }
  }
  // Both forced at once, and addresses for a product the decode-step kernel does not run.
  Buffer any = ctx().buffer(1 << 16, "any");
  auto cl = ctx().command_list();
  Gemm both = probe;
  both.texel_weights = both.address_weights = true;
  Gemm tall{.M = 9, .N = 8, .K = 64, .trans_b = true, .address_weights = true};
  for (const Gemm& g : {both, tall}) {
    try {
      o.gemm(cl, g, {.a = any.view(), .b = any.view(), .c = any.view()});
      ADD_FAILURE() << "M = " << g.M << " read through addresses" << (g.texel_weights ? " and as texels" : "");
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("addresses"), std::string::npos) << e.what();
    }
  }
}

// The direct kernel's vec4 path reads A and B from storage buffers or as texels
// (Gemm::texel_weights; texels by default on CPU drivers): both, forced, with every
// direct tuner candidate, edges of rows and columns, epilogues, a folded norm and a
// batch sharing B; forcing texels where they cannot be read (K not a multiple of 4, the
// tiled kernel) is a named error.
TEST_P(GemmTest, DirectKernelReadsAAndBFromBuffersOrTexels) {
  auto seed = test_seed();
  VKF_SEED_TRACE(seed);
  std::mt19937_64 rng(seed);
  uint32_t ran = 0;
  for (const GemmTiles& t : gemm_tile_candidates(ctx().capabilities(), dtype())) {
    if (t.strategy != GemmStrategy::Direct) continue;
    SCOPED_TRACE(t.name());
    for (bool texels : {false, true}) {
      SCOPED_TRACE(texels ? "texels" : "buffers");
      // Whole 16-byte texels in both precisions (K = 72: 8 fp16 values to a texel).
      Gemm g{.M = 19, .N = 259, .K = 72, .trans_b = true, .act = Activation::Gelu, .tiles = t};
      g.texel_weights = texels;
      if (texels && !ctx().capabilities().storage_texel_reads) {  // a driver quirk (quirks.cpp): refused by name
        Buffer any = ctx().buffer(1 << 20, "any");
        auto cl = ctx().command_list();
        try {
          ops().gemm(cl, g, {.a = any.view(), .b = any.view(), .c = any.view()});
          ADD_FAILURE() << "texels read on a device whose quirk disables them";
        } catch (const Error& e) {
          EXPECT_NE(std::string(e.what()).find("driver quirk"), std::string::npos) << e.what();
        }
        continue;
      }
      check(g, true, true, rng);
      Gemm batched = g;
      batched.M = 5, batched.N = 3, batched.K = 8, batched.batch = 2;
      batched.stride_a = {uint64_t(batched.M) * batched.K, 0};
      batched.stride_c = batched.stride_r = {uint64_t(batched.M) * batched.N, 0};
      check(batched, true, false, rng);
      if (gemm_norm_fold_problem(ctx().capabilities(), t).empty())
        check_folded_norm(33, 130, 64, NormOf::A, t, rng, texels, true);
    }
    ++ran;
  }
  if (ctx().capabilities().type == DeviceType::Cpu && !GetParam().portable) EXPECT_GT(ran, 0u);
  Buffer any = ctx().buffer(1 << 16, "any");
  auto cl = ctx().command_list();
  Gemm odd_k{.M = 19, .N = 64, .K = 13, .trans_b = true, .tiles = GemmTiles{8, 64, 4, 8, 4, GemmStrategy::Direct}};
  odd_k.texel_weights = true;
  Gemm tiled{.M = 19, .N = 64, .K = 16, .trans_b = true, .tiles = GemmTiles{32, 64, 16, 4, 8}};
  tiled.texel_weights = true;
  for (const Gemm& g : {odd_k, tiled}) {
    if (!gemm_tiles_problem(ctx().capabilities(), *g.tiles, dtype()).empty()) continue;
    try {
      ops().gemm(cl, g, {.a = any.view(), .b = any.view(), .c = any.view()});
      ADD_FAILURE() << g.tiles->name() << " K=" << g.K << " read as texels";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("cannot be read as texels"), std::string::npos) << e.what();
    }
  }
}

// B larger than one binding (a 50k-token output projection in fp32 on a device that binds
// 128 MiB): the product in slices of B's rows, each a column range of C, the bias and the
// residual; the last slice partial. The decode-step and the tiled or direct kernels.
TEST_P(GemmTest, WeightLargerThanOneBindingIsSplitByRows) {
  const uint64_t range = ctx().capabilities().max_storage_buffer_range, e = dtype_bytes(dtype());
  if (range > (256ull << 20)) GTEST_SKIP() << "this device binds " << (range >> 20) << " MiB: B would be too large";
  if (GetParam().portable || dtype() != DType::F32)  // the split is the same in every precision and profile here
    GTEST_SKIP() << "run once, in fp32 without the profile (the embedding's parts are tested in every precision)";
  auto seed = test_seed();
  VKF_SEED_TRACE(seed);
  std::mt19937_64 rng(seed);
  const uint32_t K = 1024, N = uint32_t(range / (K * e)) + 70;
  for (uint32_t m : {1u, 9u}) check({.M = m, .N = N, .K = K, .trans_b = true}, true, true, rng);
}

TEST_P(GemmTest, BatchedWithHeadStrides) {
  auto seed = test_seed();
  VKF_SEED_TRACE(seed);
  std::mt19937_64 rng(seed);
  // Q K^T per (batch, head) straight from [B, L, H*d] projections: Q rows of H*d with
  // head h at column h*d; K the same, transposed.
  const uint32_t B = 2, H = 3, L = 19, S = 23, d = 8;
  Gemm g{.M = L, .N = S, .K = d, .trans_b = true, .alpha = 0.35f, .lda = H * d, .ldb = H * d,
         .batch = B, .heads = H};
  g.stride_a = {uint64_t(L) * H * d, d};
  g.stride_b = {uint64_t(S) * H * d, d};
  g.stride_c = {uint64_t(H) * L * S, uint64_t(L) * S};
  check(g, false, false, rng);
  // Broadcast B across the batch (one weight for all), with a residual.
  Gemm w{.M = 5, .N = 9, .K = 6, .batch = 4};
  w.stride_a = {30, 0};
  w.stride_c = {45, 0};
  w.stride_r = {45, 0};
  check(w, false, true, rng);
  w.M = 40;  // the tiled kernel too
  w.stride_a = {240, 0};
  w.stride_c = {360, 0};
  w.stride_r = {360, 0};
  check(w, false, true, rng);
}

TEST_P(GemmTest, WrongShapesAreClearErrors) {
  Buffer small = ctx().buffer(64, "small"), big = ctx().buffer(1 << 16, "big");
  auto cl = ctx().command_list();
  Ops o = ops();
  try {
    o.gemm(cl, {.M = 10, .N = 10, .K = 10}, {.a = small.view(), .b = big.view(), .c = big.view()});
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("gemm: A needs 100"), std::string::npos) << e.what();
  }
  EXPECT_THROW(o.gemm(cl, {.M = 0, .N = 1, .K = 1}, {.a = big.view(), .b = big.view(), .c = big.view()}), Error);
  EXPECT_THROW(o.gemm(cl, {.M = 2, .N = 2, .K = 2, .batch = 2}, {.a = big.view(), .b = big.view(), .c = big.view()}),
               Error);
  cl.submit();
}

// A replayed decode step: row m of C goes to row step + m, the step read on the GPU from
// the DecodeStep state (C is a cache of positions, [batch, capacity, N]); every other
// row keeps its poison.
TEST_P(GemmTest, WritesAtTheDecodeStepRow) {
  auto seed = test_seed();
  VKF_SEED_TRACE(seed);
  std::mt19937_64 rng(seed);
  const uint32_t B = 3, capacity = 9, N = 37, K = 33;
  Gemm g{.M = 1, .N = N, .K = K, .trans_b = true, .batch = B};
  g.stride_a = {K, 0};
  auto A = random_values(size_t(B) * K, rng), W = random_values(size_t(N) * K, rng), bias = random_values(N, rng);
  for (auto* v : {&A, &W, &bias})
    for (auto& x : *v) x = stored(x, dtype());
  Gemm packed = g;
  packed.stride_c = {N, 0};
  const auto want = ref::gemm(packed, A, W, &bias, nullptr);  // [B, N]
  g.stride_c = {uint64_t(capacity) * N, 0};
  Buffer a = upload_as(ctx(), A, dtype(), "A"), w = upload_as(ctx(), W, dtype(), "W");
  Buffer bb = upload_as(ctx(), bias, dtype(), "bias"), state = upload_u32(ctx(), {0, 0, 0}, "decode_step");
  Buffer c = poisoned(ctx(), size_t(B) * capacity * N, dtype(), "C");
  Ops o = ops();
  auto cl = ctx().command_list();
  o.gemm(
      cl, g,
      {.a = a.view(), .b = w.view(), .c = c.view(), .bias = bb.view(), .step = DecodeStep{state.view(), capacity - 1}});
  for (uint32_t step : {0u, 5u, capacity - 1}) {
    const DecodeStep::State st{.step = step, .position = step, .key_count = step + 1};
    ctx().upload(state, &st, sizeof st);
    cl.submit();
  }
  std::vector<double> expect(size_t(B) * capacity * N, std::nan("")), scale(expect.size(), 0);
  for (uint32_t step : {0u, 5u, capacity - 1})
    for (uint32_t b = 0; b < B; ++b)
      for (uint32_t n = 0; n < N; ++n) {
        expect[(size_t(b) * capacity + step) * N + n] = want.c[size_t(b) * N + n];
        scale[(size_t(b) * capacity + step) * N + n] = want.scale[size_t(b) * N + n] + 100 * std::abs(want.c[b * N + n]);
      }
  EXPECT_TRUE(close(download_as(ctx(), c, expect.size(), dtype()), expect, scale, dtype() == DType::F16 ? 1e-3 : 1e-5,
                    dtype() == DType::F16 ? 6e-8 : 1e-30));
  // C must hold the last step's rows.
  auto cl2 = ctx().command_list();
  EXPECT_THROW(
      o.gemm(
          cl2, g,
          {.a = a.view(), .b = w.view(), .c = c.view(), .bias = bb.view(), .step = DecodeStep{state.view(), capacity}}),
      Error);
  cl2.submit();
}

// LayerNorm folded into the decode-step product: y = LN(a) W^T + b (NormOf::A, the
// pre-norm sublayer's input and every post-norm consumer) and y = a W^T + b + LN(r)
// (NormOf::Residual, post-norm's residual), against LN then GEMM in double precision.
// Rows hold values in [1, 3] (mean far from 0: the variance must be taken around the
// mean) at awkward widths, vec4 and scalar loads (K % 4), batched items: M = 1 to 4 (the
// decode-step kernel) and more rows through the default table's kernel.
// Tolerance: the statistics are fp32 sums over at most ~1000 values (relative error
// ~1e-6 of the normalised values, amplified by |mean| / std ~ 4), so the GEMM's 1e-5 of
// sum |a'_k b_k| still holds; a normalised residual adds its terms' magnitude to the
// scale, (|r| + |mean|) rstd |gamma| + |beta| (it can cancel to near 0; check_folded_norm);
// fp16 rounds the stored result (1e-3 of |c|).
TEST_P(GemmTest, FoldedLayerNormOfAOrOfTheResidual) {
  auto seed = test_seed();
  VKF_SEED_TRACE(seed);
  std::mt19937_64 rng(seed);
  const uint32_t shapes[][3] = {{1, 67, 45}, {3, 17, 256}, {4, 255, 1000}, {2, 1000, 3},  {1, 1, 1},
                                {1, 3, 1024}, {1, 64, 40}, {3, 96, 100},  {1, 64, 64},   {5, 67, 45},
                                {17, 3, 1000}, {24, 255, 64}, {130, 70, 33}, {255, 17, 1}, {1030, 40, 12}};
  for (auto& s : shapes)
    for (NormOf where : {NormOf::A, NormOf::Residual}) check_folded_norm(s[0], s[1], s[2], where, {}, rng);
}

// The same fold as an RMSNorm (Gemm::norm_kind RMSNorm, Llama's): rows scaled by their root mean
// square, nothing subtracted. Rows in [1, 3] make mean^2 dominate the mean square, so a
// kernel that centred them (a LayerNorm) would be far off; the same shapes and bounds.
TEST_P(GemmTest, FoldedRmsNormOfAOrOfTheResidual) {
  auto seed = test_seed();
  VKF_SEED_TRACE(seed);
  std::mt19937_64 rng(seed);
  const uint32_t shapes[][3] = {{1, 67, 45}, {3, 17, 256}, {4, 255, 1000}, {1, 1, 1},    {2, 1000, 3},
                                {1, 64, 64}, {17, 3, 1000}, {24, 255, 64}, {255, 17, 1}, {1030, 40, 12}};
  for (auto& s : shapes)
    for (NormOf where : {NormOf::A, NormOf::Residual})
      check_folded_norm(s[0], s[1], s[2], where, {}, rng, std::nullopt, true);
}

// The fold in every variant the tuner may pick that can hold it (tiled and direct; the
// rest are refused by name), both norms, vec4 loads (K = 64) for every other candidate
// and scalar ones (K = 45) for the rest (one pipeline each: both norms share it).
TEST_P(GemmTest, FoldedLayerNormInEveryTunerCandidate) {
  auto seed = test_seed();
  VKF_SEED_TRACE(seed);
  std::mt19937_64 rng(seed);
  const Capabilities& caps = ctx().capabilities();
  uint32_t i = 0, ran = 0;
  for (const GemmTiles& t : gemm_tile_candidates(caps, dtype())) {
    if (const std::string why = gemm_norm_fold_problem(caps, t); !why.empty()) {
      Buffer x = ctx().buffer(64 * 64 * 4, "x");
      auto cl = ctx().command_list();
      Gemm g{.M = 37, .N = 8, .K = 8, .trans_b = true, .norm_of = NormOf::A, .tiles = t};
      EXPECT_THROW(
          ops().gemm(cl, g, {.a = x.view(), .b = x.view(), .c = x.view(), .norm = NormWeights{x.view(), x.view()}}),
          Error)
          << t.name() << ": " << why;
      continue;
    }
    const uint32_t K = i++ % 2 ? 45 : 64;
    for (NormOf where : {NormOf::A, NormOf::Residual}) check_folded_norm(37, 70, K, where, t, rng);
    check_folded_norm(37, 70, K, NormOf::A, t, rng, std::nullopt, true);  // and as an RMSNorm
    ++ran;
  }
  EXPECT_GT(ran, 0u);
}

// Row statistics (RowStats) handed from the GEMM that writes a norm's input to those that
// fold the norm: the partials the producer writes merge, in double, to its stored rows'
// count, mean and M2, and products folding the norm of those rows as A and as the
// residual match LN then GEMM in double. Devices whose GEMMs write none (GPUs, the
// portable profile) must say so by returning none and writing nothing.
// Tolerance: each partial is fp32 over at most a few hundred stored values, merged in
// fp32 (the parallel formula has no cancellation): ~1e-6 relative, checked at 1e-5 of
// the mean's scale (|mean| + std) and of M2 + n mean^2 (fp16: 1e-3, the stored values'
// rounding, which a kernel may do differently from the store by an ulp); the folded
// products as in the test above.
TEST_P(GemmTest, RowStatisticsPassedFromTheProductThatWritesTheRows) {
  auto seed = test_seed();
  VKF_SEED_TRACE(seed);
  std::mt19937_64 rng(seed);
  const DType dt = dtype();
  Context& c_ = ctx();
  Ops o = ops();
  const uint32_t shapes[][3] = {{5, 1, 17}, {17, 3, 64}, {24, 255, 45}, {255, 17, 3}, {37, 512, 64}, {1030, 70, 33}};
  for (auto& sh : shapes) {
    const uint32_t M = sh[0], N = sh[1], K = sh[2];
    SCOPED_TRACE("M=" + std::to_string(M) + " N=" + std::to_string(N) + " K=" + std::to_string(K));
    const Gemm g{.M = M, .N = N, .K = K, .trans_b = true};
    const uint32_t parts = o.gemm_row_stats_parts(g);
    auto A = random_values(size_t(M) * K, rng), W = random_values(size_t(N) * K, rng);
    auto bias = random_values(N, rng, 1, 3), R = random_values(size_t(M) * N, rng);
    for (auto* v : {&A, &W, &bias, &R})
      for (auto& x : *v) x = stored(x, dt);
    Buffer a = upload_as(c_, A, dt, "A"), w = upload_as(c_, W, dt, "W"), bb = upload_as(c_, bias, dt, "bias");
    Buffer r = upload_as(c_, R, dt, "R"), c = poisoned(c_, size_t(M) * N, dt, "C");
    Buffer st = poisoned(c_, size_t(M) * std::max(parts, 1u) * 4, DType::F32, "stats");
    auto cl = c_.command_list();
    const auto written = o.gemm(cl, g,
                                {.a = a.view(),
                                 .b = w.view(),
                                 .c = c.view(),
                                 .bias = bb.view(),
                                 .residual = r.view(),
                                 .stats = {.out = st.view()}});  // C = A W^T + bias + R
    cl.submit();
    const auto C = download_as(c_, c, size_t(M) * N, dt);
    if (parts == 0) {
      EXPECT_FALSE(written) << "a device that writes no row statistics returned some";
      for (double v : download_as(c_, st, size_t(M) * 4, DType::F32)) ASSERT_TRUE(std::isnan(v)) << "it wrote some";
      continue;
    }
    ASSERT_TRUE(written);
    EXPECT_EQ(written->parts, parts);
    const auto P = download_as(c_, st, size_t(M) * parts * 4, DType::F32);
    const double rtol = dt == DType::F16 ? 1e-3 : 1e-5;  // fp16: the statistics of values as rounded, within an ulp (2^-11)
    for (uint32_t m = 0; m < M; ++m) {
      double n = 0, mean = 0, m2 = 0, want_mean = 0, want_m2 = 0;
      for (uint32_t j = 0; j < N; ++j) want_mean += C[size_t(m) * N + j] / N;
      for (uint32_t j = 0; j < N; ++j) want_m2 += (C[size_t(m) * N + j] - want_mean) * (C[size_t(m) * N + j] - want_mean);
      for (uint32_t p = 0; p < parts; ++p) {
        const double* v = &P[(size_t(m) * parts + p) * 4];
        ASSERT_TRUE(std::isfinite(v[0]) && std::isfinite(v[1]) && std::isfinite(v[2])) << "row " << m << " part " << p;
        if (v[0] == 0) continue;
        const double total = n + v[0], delta = v[1] - mean;
        mean += delta * v[0] / total;
        m2 += v[2] + delta * delta * n * v[0] / total;
        n = total;
      }
      ASSERT_EQ(n, double(N)) << "row " << m;
      ASSERT_NEAR(mean, want_mean, rtol * (std::abs(want_mean) + std::sqrt(want_m2 / N))) << "row " << m;
      ASSERT_NEAR(m2, want_m2, rtol * (want_m2 + N * want_mean * want_mean) + 1e-30) << "row " << m;
    }
    // Products folding LN(C) as A (K' = N) and as the residual (N' = N), from the partials.
    const LayerNorm ln{.rows = M, .cols = N, .eps = 1e-5f};
    auto gamma = random_values(N, rng, 0.5, 1.5), beta = random_values(N, rng);
    for (auto* v : {&gamma, &beta})
      for (auto& x : *v) x = stored(x, dt);
    const auto normed = ref::layer_norm(ln, C, gamma, beta, nullptr);
    Buffer gm = upload_as(c_, gamma, dt, "gamma"), bt = upload_as(c_, beta, dt, "beta");
    for (NormOf where : {NormOf::A, NormOf::Residual}) {
      SCOPED_TRACE(where == NormOf::A ? "norm of A" : "norm of the residual");
      const uint32_t N2 = where == NormOf::A ? 19 : N, K2 = where == NormOf::A ? N : 23;
      Gemm g2{.M = M, .N = N2, .K = K2, .trans_b = true, .norm_of = where};
      auto A2 = random_values(size_t(M) * K2, rng), W2 = random_values(size_t(N2) * K2, rng);
      for (auto* v : {&A2, &W2})
        for (auto& x : *v) x = stored(x, dt);
      Gemm plain = g2;
      plain.norm_of = NormOf::None;
      const auto want = where == NormOf::A ? ref::gemm(plain, normed, W2, nullptr, nullptr)
                                           : ref::gemm(plain, A2, W2, nullptr, &normed);
      Buffer a2 = upload_as(c_, A2, dt, "A2"), w2 = upload_as(c_, W2, dt, "W2"), out = poisoned(c_, want.c.size(), dt, "D");
      auto cl2 = c_.command_list();
      o.gemm(cl2, g2,
             {.a = where == NormOf::A ? c.view() : a2.view(),
              .b = w2.view(),
              .c = out.view(),
              .residual = where == NormOf::A ? std::nullopt : std::optional(c.view()),
              .norm = NormWeights{gm.view(), bt.view()},
              .stats = {.in = written}});
      cl2.submit();
      std::vector<double> scale(want.c.size());
      const double store = dt == DType::F16 ? 1e-3 : 0;
      for (size_t i = 0; i < scale.size(); ++i) scale[i] = want.scale[i] + (store / 1e-5) * std::abs(want.c[i]);
      EXPECT_TRUE(close(download_as(c_, out, want.c.size(), dt), want.c, scale, 1e-5, dt == DType::F16 ? 6e-8 : 1e-30));
    }
  }
}

TEST_P(GemmTest, RowStatisticsMisuseIsAClearError) {
  Buffer x = ctx().buffer(64 * 64 * 4, "x");
  Ops o = ops();
  auto cl = ctx().command_list();
  auto message = [&](const Gemm& g, const GemmRowStats& st, bool norm) {
    try {
      o.gemm(cl, g,
             {.a = x.view(),
              .b = x.view(),
              .c = x.view(),
              .norm = norm ? std::optional(NormWeights{x.view(), x.view()}) : std::nullopt,
              .stats = st});
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const Gemm plain{.M = 16, .N = 8, .K = 8, .trans_b = true};
  EXPECT_NE(message(plain, {.in = RowStats{x.view(), 2}}, false).find("need a folded norm"), std::string::npos);
  Gemm folded = plain;
  folded.norm_of = NormOf::A;
  EXPECT_NE(message(folded, {.in = RowStats{x.view(), 0}}, true).find("0 partials"), std::string::npos);
  if (o.gemm_row_stats_parts(plain)) {
    const BufferView tiny{x.view().alloc, 0, 16};
    EXPECT_NE(message(plain, {.out = tiny}, false).find("row statistics out"), std::string::npos);
    EXPECT_NE(message(folded, {.in = RowStats{tiny, 2}}, true).find("row statistics in"), std::string::npos);
  }
}

TEST_P(GemmTest, FoldedLayerNormMisuseIsAClearError) {
  Buffer x = ctx().buffer(64 * 64 * 4, "x");
  Ops o = ops();
  auto cl = ctx().command_list();
  const NormWeights nw{x.view(), x.view()};
  auto message = [&](const Gemm& g, std::optional<NormWeights> w, bool residual) {
    try {
      o.gemm(cl, g,
             {.a = x.view(),
              .b = x.view(),
              .c = x.view(),
              .residual = residual ? std::optional(x.view()) : std::nullopt,
              .norm = w});
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  Gemm g{.M = 1, .N = 8, .K = 8, .trans_b = true, .norm_of = NormOf::A};
  EXPECT_NE(message(g, std::nullopt, false).find("needs its gamma and beta"), std::string::npos);
  Gemm transposed = g;
  transposed.M = 5;
  transposed.trans_a = true;  // the norm runs along A's rows
  EXPECT_NE(message(transposed, nw, false).find("A is not transposed"), std::string::npos);
  Gemm heads = g;
  heads.M = 40;
  heads.heads = 2;
  heads.stride_c = {0, 320};
  EXPECT_NE(message(heads, nw, false).find("one batch of heads"), std::string::npos);
  Gemm res = g;
  res.norm_of = NormOf::Residual;
  EXPECT_NE(message(res, nw, false).find("needs a residual"), std::string::npos);
  Gemm none = g;
  none.norm_of = NormOf::None;
  EXPECT_NE(message(none, nw, false).find("norm_of is None"), std::string::npos);
  cl.submit();
}

// A split output: columns [split, N) go to a second buffer with its own layout (a
// fused QKV projection: queries to scratch, keys and values to a cache), at awkward
// shapes, both GEMM kernels (M <= 4 and the tiled one), with and without a decode step
// (which moves only the split part's rows), and through split-K (its second pass
// applies the split and the step rows). With rows_are_items, row m of one product goes
// to batch item m's cache at the step (a batch's decode step as one product), also from
// a weight in Q8_0 blocks (the decode-step kernels that read them). Unwritten elements
// keep their poison.
TEST_P(GemmTest, SplitOutputGoesToItsOwnLayout) {
  auto seed = test_seed();
  VKF_SEED_TRACE(seed);
  std::mt19937_64 rng(seed);
  struct Case {
    uint32_t M, N, K, split, batch;
    bool stepped, items = false, blocks = false;
  };
  const GemmTiles split_k{32, 64, 16, 4, 8, GemmStrategy::Tiled, 4};
  std::vector<std::optional<GemmTiles>> tilings = {std::nullopt};
  if (gemm_tiles_problem(ctx().capabilities(), split_k, dtype()).empty()) tilings.push_back(split_k);
  for (const auto& tiles : tilings)
  for (const Case& t : {Case{1, 3, 1, 1, 1, false}, Case{1, 48, 33, 16, 3, true}, Case{3, 37, 17, 11, 2, false},
                        Case{17, 255, 64, 85, 2, false}, Case{70, 40, 9, 39, 1, false}, Case{9, 40, 70, 13, 2, true},
                        Case{24, 67, 1030, 30, 1, false}, Case{1, 48, 33, 16, 1, true, true},
                        Case{5, 40, 70, 13, 1, true, true}, Case{17, 37, 17, 11, 1, false, true},
                        Case{24, 67, 1030, 30, 1, true, true}, Case{3, 40, 64, 13, 1, true, true, true},
                        Case{16, 37, 96, 11, 1, true, true, true}}) {
    if (t.blocks && tiles) continue;  // (a weight in blocks has no tiles of its own)
    SCOPED_TRACE("M=" + std::to_string(t.M) + " N=" + std::to_string(t.N) + " split=" + std::to_string(t.split) +
                 (tiles ? " " + tiles->name() : "") + (t.items ? " rows are items" : "") + (t.blocks ? " q8_0" : ""));
    const uint32_t items = t.items ? t.M : t.batch;  // batch items of the split output
    const uint32_t rows2 = (t.items ? 1 : t.M) + (t.stepped ? 4 : 0) + 1;  // a cache of rows2 positions per item
    const uint32_t cols2 = t.N - t.split, ld2 = cols2 + 3;
    Gemm g{.M = t.M, .N = t.N, .K = t.K, .trans_b = true, .batch = t.batch, .tiles = tiles};
    g.stride_a = {uint64_t(t.M) * t.K, 0};
    g.stride_c = {uint64_t(t.M) * t.split, 0};
    g.split = {.column = t.split, .ld = ld2, .stride = uint64_t(rows2) * ld2, .rows_are_items = t.items};
    auto A = random_values(size_t(t.batch) * t.M * t.K, rng), W = random_values(size_t(t.N) * t.K, rng);
    auto bias = random_values(t.N, rng);
    for (auto* v : {&A, &W, &bias})
      for (auto& x : *v) x = stored(x, dtype());
    std::vector<uint8_t> w_blocks;
    if (t.blocks) {  // the weight as the kernel sees it: quantized, dequantized
      w_blocks = quantize_blocks(BlockType::Q8_0, std::vector<float>(W.begin(), W.end()));
      const auto back = dequantize_blocks(BlockType::Q8_0, w_blocks);
      W.assign(back.begin(), back.end());
      g.b_blocks = BlockType::Q8_0;
      if (!ops().gemm_reads_blocks(g))
        for (auto& x : W) x = stored(x, dtype());  // read dequantized into the storage type
    }
    Gemm whole = g;
    whole.split = {};
    whole.b_blocks.reset();
    whole.stride_c = {uint64_t(t.M) * t.N, 0};
    const auto want = ref::gemm(whole, A, W, &bias, nullptr);  // [batch, M, N]
    const uint32_t step = t.stepped ? 3 : 0;
    Buffer a = upload_as(ctx(), A, dtype(), "A");
    Buffer w = t.blocks ? upload_blocks(ctx(), BlockType::Q8_0, w_blocks, t.N, t.K, "W") : upload_as(ctx(), W, dtype(), "W");
    Buffer scratch = ctx().buffer(uint64_t(t.N) * t.K * 4, "scratch");
    Buffer bb = upload_as(ctx(), bias, dtype(), "bias"), state = upload_u32(ctx(), {step, step, step + 1}, "decode_step");
    Buffer c = poisoned(ctx(), size_t(t.batch) * t.M * t.split, dtype(), "C");
    Buffer c2 = poisoned(ctx(), size_t(items) * rows2 * ld2, dtype(), "C2");
    Ops o = ops();
    auto cl = ctx().command_list();
    o.gemm(cl, g,
           {.a = a.view(),
            .b = w.view(),
            .c = c.view(),
            .bias = bb.view(),
            .step = t.stepped ? std::optional(DecodeStep{state.view(), step + 1}) : std::nullopt,
            .split_out = c2.view(),
            .scratch = scratch.view()});
    cl.submit();
    std::vector<double> want1(size_t(t.batch) * t.M * t.split), scale1(want1.size());
    std::vector<double> want2(size_t(items) * rows2 * ld2, std::nan("")), scale2(want2.size(), 0);
    for (uint32_t b = 0; b < t.batch; ++b)
      for (uint32_t m = 0; m < t.M; ++m)
        for (uint32_t n = 0; n < t.N; ++n) {
          const size_t from = (size_t(b) * t.M + m) * t.N + n;
          const double sc = want.scale[from] + 100 * std::abs(want.c[from]);
          if (n < t.split) {
            want1[(size_t(b) * t.M + m) * t.split + n] = want.c[from];
            scale1[(size_t(b) * t.M + m) * t.split + n] = sc;
          } else {
            const size_t to = t.items ? (size_t(m) * rows2 + step) * ld2 + (n - t.split)
                                      : (size_t(b) * rows2 + step + m) * ld2 + (n - t.split);
            want2[to] = want.c[from];
            scale2[to] = sc;
          }
        }
    const bool f16 = dtype() == DType::F16;
    EXPECT_TRUE(close(download_as(ctx(), c, want1.size(), dtype()), want1, scale1, f16 ? 1e-3 : 1e-5, f16 ? 6e-8 : 1e-30));
    EXPECT_TRUE(close(download_as(ctx(), c2, want2.size(), dtype()), want2, scale2, f16 ? 1e-3 : 1e-5, f16 ? 6e-8 : 1e-30));
  }
  // A split without its buffer, or at a column outside N: clear errors.
  Buffer small = ctx().buffer(4096, "small");
  auto cl = ctx().command_list();
  Ops o = ops();
  Gemm bad{.M = 1, .N = 8, .K = 4, .trans_b = true};
  bad.split.column = 4;
  EXPECT_THROW(o.gemm(cl, bad, {.a = small.view(), .b = small.view(), .c = small.view()}), Error);
  bad.split.column = 8;
  EXPECT_THROW(o.gemm(cl, bad, {.a = small.view(), .b = small.view(), .c = small.view(), .split_out = small.view()}),
               Error);
  // Rows that are batch items: one batch of one head, and a stride between the items.
  Gemm items{.M = 2, .N = 8, .K = 4, .trans_b = true, .batch = 2};
  items.stride_a = {8, 0};
  items.stride_c = {8, 0};
  items.split = {.column = 4, .ld = 4, .stride = 16, .rows_are_items = true};
  EXPECT_THROW(o.gemm(cl, items, {.a = small.view(), .b = small.view(), .c = small.view(), .split_out = small.view()}),
               Error);
  items.batch = 1, items.split.stride = 0;
  EXPECT_THROW(o.gemm(cl, items, {.a = small.view(), .b = small.view(), .c = small.view(), .split_out = small.view()}),
               Error);
  cl.submit();
}

VKF_FOR_EACH_DTYPE(GemmTest);

}  // namespace
}  // namespace vkf::test
