// Flash-decoding attention, with and without its output projection, against the double
// reference: attention from ref::attention, the projection written out here.
// Tolerances: the attention output is a convex combination of values computed in fp32
// with a running max per stretch of keys and one rescale per stretch when they are
// combined: a few 2^-24 per exp and rescale over up to ~1000 keys, 2e-5 of the scale
// sum_j p_j |v_j| (as the attention test). The projection adds an fp32 dot product of
// heads * head_dim terms (<= 256 here: 256 * 2^-24 = 1.5e-5) of the attention output,
// itself within 2e-5: 4e-5 of sum |attn_i w_ci| + |b_c| + |residual_c|. fp16 storage:
// the inputs are rounded before the reference, everything runs in fp32 and the output
// rounds once (2^-11 = 4.9e-4 of |out| <= scale): 1e-3 (6e-8 absolute: fp16's
// smallest subnormal, for outputs near zero).
#include "support/ops_test.hpp"
#include "ops/reference.hpp"

namespace vkf::test {
namespace {

struct Case {
  uint32_t batch, heads, head_dim, kv_len;
  bool padding;
  uint32_t projection_n = 0;  // 0: no projection
  bool bias = false, residual = false, residual_norm = false;
  uint32_t kv_heads = 0;  // grouped-query attention: fewer K/V heads (0: heads)
  NormKind norm_kind = NormKind::LayerNorm;  // residual_norm's
  bool position_bias = false;  // an AttentionBias, the query at position kv_len - 1
};

std::string name(const Case& c) {
  return "B=" + std::to_string(c.batch) + " H=" + std::to_string(c.heads) + " d=" + std::to_string(c.head_dim) +
         " Lk=" + std::to_string(c.kv_len) + (c.padding ? " padding" : "") +
         (c.projection_n ? " N=" + std::to_string(c.projection_n) : "") + (c.bias ? " bias" : "") +
         (c.residual ? " residual" : "") + (c.residual_norm ? " norm" : "") +
         (c.residual_norm && c.norm_kind == NormKind::RMSNorm ? " RMSNorm" : "") +
         (c.kv_heads ? " KVH=" + std::to_string(c.kv_heads) : "") + (c.position_bias ? " position bias" : "");
}

// out[b, c] = sum_i attn[b, i] W[c, i] + bias[c] + LN?(r[b, :])[c], and the scale its
// rounding errors grow with.
std::pair<std::vector<double>, std::vector<double>> project(const std::vector<double>& attn,
                                                            const std::vector<double>& attn_scale, uint32_t B,
                                                            uint32_t width, uint32_t N, const std::vector<double>& w,
                                                            const std::vector<double>* bias, std::vector<double> r,
                                                            bool residual, const std::vector<double>* gamma,
                                                            const std::vector<double>* beta, double eps, bool rms) {
  if (residual && gamma)
    for (uint32_t b = 0; b < B; ++b) {
      double mean = 0, var = 0;
      for (uint32_t c = 0; c < N; ++c) mean += r[size_t(b) * N + c];
      mean = rms ? 0.0 : mean / N;  // RMSNorm: no centring, no beta
      for (uint32_t c = 0; c < N; ++c) var += (r[size_t(b) * N + c] - mean) * (r[size_t(b) * N + c] - mean);
      const double rstd = 1 / std::sqrt(var / N + eps);
      for (uint32_t c = 0; c < N; ++c)
        r[size_t(b) * N + c] = (r[size_t(b) * N + c] - mean) * rstd * (*gamma)[c] + (rms ? 0.0 : (*beta)[c]);
    }
  std::vector<double> out(size_t(B) * N), scale(out.size());
  for (uint32_t b = 0; b < B; ++b)
    for (uint32_t c = 0; c < N; ++c) {
      double s = 0, mag = 0;
      for (uint32_t i = 0; i < width; ++i) {
        s += attn[size_t(b) * width + i] * w[size_t(c) * width + i];
        mag += (std::abs(attn[size_t(b) * width + i]) + attn_scale[size_t(b) * width + i]) * std::abs(w[size_t(c) * width + i]);
      }
      if (bias) {
        s += (*bias)[c];
        mag += std::abs((*bias)[c]);
      }
      if (residual) {
        s += r[size_t(b) * N + c];
        mag += std::abs(r[size_t(b) * N + c]);
      }
      out[size_t(b) * N + c] = s;
      scale[size_t(b) * N + c] = mag;
    }
  return {out, scale};
}

class DecodeAttentionTest : public OpsTest {
 protected:
  void check(const Case& c, std::mt19937_64& rng) {
    SCOPED_TRACE(name(c));
    const uint32_t W = c.heads * c.head_dim, N = c.projection_n, KW = (c.kv_heads ? c.kv_heads : c.heads) * c.head_dim;
    auto rounded = [&](std::vector<double> v) {
      for (auto& e : v) e = stored(e, dtype());
      return v;
    };
    auto q = rounded(random_values(size_t(c.batch) * W, rng, -2, 2));
    auto k = rounded(random_values(size_t(c.batch) * c.kv_len * KW, rng, -2, 2));
    auto v = rounded(random_values(size_t(c.batch) * c.kv_len * KW, rng));
    std::vector<double> mask(size_t(c.batch) * c.kv_len, 0.0);
    if (c.padding)  // batch item b keeps its first kv_len - b*(kv_len/4 + 1) keys (at least 1)
      for (uint32_t b = 0; b < c.batch; ++b)
        for (uint32_t j = std::max<int64_t>(1, int64_t(c.kv_len) - b * (c.kv_len / 4 + 1)); j < c.kv_len; ++j)
          mask[size_t(b) * c.kv_len + j] = -INFINITY;
    const Attention a{.batch = c.batch, .heads = c.heads, .head_dim = c.head_dim, .kv_heads = c.kv_heads, .q_len = 1,
                      .kv_len = c.kv_len};
    // A relative-position table [heads, 2P - 1] wider than the pass reads (P = kv_len + 2).
    ref::PositionBias bias_table{{0.0}, 1, 0};
    if (c.position_bias) {
      const uint32_t P = c.kv_len + 2;
      bias_table = {random_values(size_t(c.heads) * (2 * P - 1), rng, -2, 2), 2 * P - 1, P - 1};
      for (auto& e : bias_table.table) e = double(float(e));
    }
    auto [attn, attn_scale] = ref::attention(a, q, k, v, c.padding ? &mask : nullptr,
                                             c.position_bias ? &bias_table : nullptr, uint64_t(c.kv_len - 1));
    std::vector<double> want = attn, scale = attn_scale;
    const double eps = 1e-5;
    std::vector<double> w, bias, r, gamma, beta;
    if (N) {
      w = rounded(random_values(size_t(N) * W, rng, -0.5, 0.5));
      bias = rounded(random_values(N, rng));
      r = rounded(random_values(size_t(c.batch) * N, rng, -3, 5));  // a mean away from 0 for the norm
      gamma = rounded(random_values(N, rng, 0.5, 1.5));
      beta = rounded(random_values(N, rng));
      std::tie(want, scale) = project(attn, attn_scale, c.batch, W, N, w, c.bias ? &bias : nullptr, r, c.residual,
                                      c.residual_norm ? &gamma : nullptr, &beta, eps, c.norm_kind == NormKind::RMSNorm);
    }

    Buffer bq = upload_as(ctx(), q, dtype(), "q"), bk = upload_as(ctx(), k, dtype(), "k");
    Buffer bv = upload_as(ctx(), v, dtype(), "v"), bm = upload_as(ctx(), mask, dtype(), "mask");
    Buffer bw = upload_as(ctx(), w, dtype(), "w"), bb = upload_as(ctx(), bias, dtype(), "bias");
    Buffer br = upload_as(ctx(), r, dtype(), "residual"), bg = upload_as(ctx(), gamma, dtype(), "gamma");
    Buffer be = c.norm_kind == NormKind::RMSNorm ? poisoned(ctx(), N, dtype(), "beta")  // an RMSNorm's: never read
                                                 : upload_as(ctx(), beta, dtype(), "beta");
    Buffer out = poisoned(ctx(), want.size(), dtype(), "out");
    Ops o = ops();
    const uint64_t scratch_bytes = o.decode_attention_scratch_bytes(a, N);
    Buffer scratch = upload_u32(ctx(), std::vector<uint32_t>(scratch_bytes / 4, 0), "scratch");
    std::optional<AttentionProjection> p;
    if (N) {
      p = AttentionProjection{.weight = bw.view(), .norm_kind = c.norm_kind, .N = N, .norm_eps = float(eps)};
      if (c.bias) p->bias = bb.view();
      if (c.residual) p->residual = br.view();
      if (c.residual_norm) p->residual_norm = NormWeights{bg.view(), be.view()};
    }
    Buffer table = upload_as(ctx(), bias_table.table, DType::F32, "position bias");
    auto cl = ctx().command_list();
    o.decode_attention(cl, a, bq.view(), bk.view(), bv.view(), out.view(), scratch.view(),
                       c.padding ? std::optional(bm.view()) : std::nullopt, std::nullopt, p,
                       c.position_bias ? std::optional(AttentionBias{table.view(), bias_table.positions, bias_table.origin})
                                       : std::nullopt);
    cl.submit();
    const bool f16 = dtype() == DType::F16;
    EXPECT_TRUE(close(download_as(ctx(), out, want.size(), dtype()), want, scale, f16 ? 1e-3 : (N ? 4e-5 : 2e-5),
                      f16 ? 6e-8 : 0));
    // The counters are back at zero, ready for the next dispatch.
    const auto tickets = download_u32(ctx(), scratch, size_t(c.batch) * c.heads + c.batch);
    EXPECT_EQ(tickets, std::vector<uint32_t>(tickets.size(), 0u));
  }
};

TEST_P(DecodeAttentionTest, MatchesTheReferenceAtAwkwardSizes) {
  auto seed = test_seed();
  VKF_SEED_TRACE(seed);
  std::mt19937_64 rng(seed);
  for (bool padding : {false, true}) {
    check({1, 1, 8, 1, padding}, rng);
    check({3, 2, 17, 3, padding}, rng);
    check({2, 3, 17, 17, padding}, rng);
    check({1, 8, 64, 255, padding}, rng);
    check({2, 2, 17, 1000, padding}, rng);  // several stretches on every device
    check({1, 1, 64, 300, padding}, rng);
  }
}

TEST_P(DecodeAttentionTest, ProjectsAddsBiasAndNormalisesTheResidual) {
  auto seed = test_seed();
  VKF_SEED_TRACE(seed);
  std::mt19937_64 rng(seed);
  check({1, 1, 8, 1, false, 1, true, true, false}, rng);
  check({1, 2, 8, 5, false, 16, false, false, false}, rng);
  check({3, 4, 17, 70, true, 64, true, true, false}, rng);
  check({3, 4, 17, 70, true, 64, true, true, true}, rng);
  check({2, 4, 64, 300, false, 256, true, true, true}, rng);  // several stretches, then heads combined
  check({4, 3, 17, 1000, true, 255, false, true, true}, rng);
  // The residual's norm an RMSNorm (NormKind): no mean taken, beta never read (poisoned).
  check({.batch = 1, .heads = 1, .head_dim = 8, .kv_len = 1, .padding = false, .projection_n = 1, .bias = true,
         .residual = true, .residual_norm = true, .norm_kind = NormKind::RMSNorm}, rng);
  check({.batch = 3, .heads = 4, .head_dim = 17, .kv_len = 70, .padding = true, .projection_n = 255, .bias = false,
         .residual = true, .residual_norm = true, .kv_heads = 2, .norm_kind = NormKind::RMSNorm}, rng);
}

// An additive bias by relative position (AttentionBias), the step's query the newest
// key: alone, with padding, the projection and grouped heads, over several stretches.
TEST_P(DecodeAttentionTest, PositionBiasByRelativePosition) {
  auto seed = test_seed();
  VKF_SEED_TRACE(seed);
  std::mt19937_64 rng(seed);
  check({.batch = 1, .heads = 1, .head_dim = 8, .kv_len = 1, .padding = false, .position_bias = true}, rng);
  check({.batch = 3, .heads = 2, .head_dim = 17, .kv_len = 17, .padding = true, .position_bias = true}, rng);
  check({.batch = 2, .heads = 4, .head_dim = 64, .kv_len = 300, .padding = true, .projection_n = 255, .bias = true,
         .residual = true, .residual_norm = true, .kv_heads = 2, .position_bias = true}, rng);
  check({.batch = 1, .heads = 3, .head_dim = 17, .kv_len = 1000, .padding = false, .position_bias = true}, rng);
}

// Grouped-query attention (Llama's): query head h reads K/V head h / (heads / kv_heads),
// K and V packed [B, Lk, kv_heads * d], with and without the projection. A workgroup
// takes a whole group of query heads (up to 8, loading each key and value once for
// them): groups of 2, 3, 4, 5 and 8, and 16, which takes two workgroups of 8 per K/V head.
TEST_P(DecodeAttentionTest, GroupedQueryHeadsShareTheirKeyValueHead) {
  auto seed = test_seed();
  VKF_SEED_TRACE(seed);
  std::mt19937_64 rng(seed);
  check({1, 4, 8, 1, false, 0, false, false, false, 1}, rng);
  check({3, 4, 17, 70, true, 0, false, false, false, 2}, rng);
  check({2, 6, 64, 300, false, 0, false, false, false, 3}, rng);
  check({3, 9, 17, 1000, true, 64, true, true, false, 3}, rng);  // SmolLM's 9 over 3
  check({2, 8, 16, 255, true, 100, false, true, false, 1}, rng);
  check({1, 10, 12, 300, true, 0, false, false, false, 2}, rng);       // groups of 5
  check({2, 16, 8, 513, false, 40, true, true, true, 1}, rng);         // 16: two workgroups per K/V head
  check({1, 32, 4, 3, false, 0, false, false, false, 2}, rng);         // 16, no projection
}

// A decode cache laid out as the model keeps it ([B, capacity, 2D], K then V in each
// row), recorded once and replayed at several key counts (the ticket counters must be
// back at zero after every dispatch for the next to combine right), with the projection
// writing in place over its own residual (pre-norm's x += ...), batch item 1 left-padded
// by 3 keys its padding mask [batch, capacity] drops (finite, as decoder-only batches
// mask: the padding's own queries then stay finite).
TEST_P(DecodeAttentionTest, ReplaysAtTheStepsKeyCountInPlace) {
  auto seed = test_seed();
  VKF_SEED_TRACE(seed);
  std::mt19937_64 rng(seed);
  const uint32_t B = 2, H = 2, d = 17, W = H * d, capacity = 150;
  auto rounded = [&](std::vector<double> v) {
    for (auto& e : v) e = stored(e, dtype());
    return v;
  };
  auto q = rounded(random_values(size_t(B) * W, rng, -2, 2));
  auto kv = rounded(random_values(size_t(B) * capacity * 2 * W, rng, -2, 2));
  auto w = rounded(random_values(size_t(W) * W, rng, -0.5, 0.5)), bias = rounded(random_values(W, rng));
  Buffer bq = upload_as(ctx(), q, dtype(), "q"), bkv = upload_as(ctx(), kv, dtype(), "kv_cache");
  Buffer bw = upload_as(ctx(), w, dtype(), "w"), bb = upload_as(ctx(), bias, dtype(), "bias");
  Buffer x = poisoned(ctx(), size_t(B) * W, dtype(), "x");
  Buffer state = upload_u32(ctx(), {0, 0, 0}, "decode_step");
  std::vector<double> mask(size_t(B) * capacity, 0.0);
  for (uint32_t j = 0; j < 3; ++j) mask[capacity + j] = -30000.0;
  Buffer bm = upload_as(ctx(), mask, dtype(), "mask");
  const uint64_t e = dtype_bytes(dtype());
  const Attention a{.batch = B, .heads = H, .head_dim = d, .q_len = 1, .kv_len = capacity,
                    .kv_batch_stride = uint64_t(capacity) * 2 * W, .kv_row_stride = 2 * W};
  Ops o = ops();
  Buffer scratch = upload_u32(ctx(), std::vector<uint32_t>(o.decode_attention_scratch_bytes(a, W) / 4, 0), "scratch");
  const DecodeStep step{.state = state.view(), .max_step = capacity - 1};
  // Then again with a bias by relative position, the query at the step's newest key.
  ref::PositionBias relative{rounded(random_values(size_t(H) * (2 * capacity - 1), rng, -2, 2)), 2 * capacity - 1,
                             capacity - 1};
  for (auto& v : relative.table) v = double(float(v));
  Buffer table = upload_as(ctx(), relative.table, DType::F32, "position bias");
  for (bool positioned : {false, true}) {
  auto cl = ctx().command_list();
  o.decode_attention(cl, a, bq.view(), bkv.view(), bkv.view(W * e), x.view(), scratch.view(), bm.view(), step,
                     AttentionProjection{.weight = bw.view(), .bias = bb.view(), .residual = x.view(), .N = W},
                     positioned ? std::optional(AttentionBias{table.view(), relative.positions, relative.origin})
                                : std::nullopt);
  for (uint32_t keys : {1u, 2u, 64u, 65u, 129u, capacity}) {
    SCOPED_TRACE(std::to_string(keys) + " keys" + (positioned ? " position bias" : ""));
    auto residual = rounded(random_values(size_t(B) * W, rng, -3, 3));
    Buffer fresh = upload_as(ctx(), residual, dtype(), "residual");
    {
      auto copy = ctx().command_list();  // x = residual (its poison gone once the step has run)
      o.convert(copy, fresh.view(), dtype(), x.view(), dtype(), uint32_t(residual.size()));
      copy.submit();
    }
    const DecodeStep::State st{.step = keys - 1, .position = keys - 1, .key_count = keys};
    ctx().upload(state, &st, sizeof st);
    cl.submit();
    std::vector<double> k(size_t(B) * keys * W), v(k.size());  // the first `keys` rows, packed
    for (uint32_t b = 0; b < B; ++b)
      for (uint32_t j = 0; j < keys; ++j)
        for (uint32_t c = 0; c < W; ++c) {
          k[(size_t(b) * keys + j) * W + c] = kv[(size_t(b) * capacity + j) * 2 * W + c];
          v[(size_t(b) * keys + j) * W + c] = kv[(size_t(b) * capacity + j) * 2 * W + W + c];
        }
    std::vector<double> packed_mask(size_t(B) * keys);
    for (uint32_t b = 0; b < B; ++b)
      for (uint32_t j = 0; j < keys; ++j) packed_mask[size_t(b) * keys + j] = mask[size_t(b) * capacity + j];
    const Attention packed{.batch = B, .heads = H, .head_dim = d, .q_len = 1, .kv_len = keys};
    auto [attn, attn_scale] = ref::attention(packed, q, k, v, &packed_mask, positioned ? &relative : nullptr, keys - 1);
    auto [want, scale] = project(attn, attn_scale, B, W, W, w, &bias, residual, true, nullptr, nullptr, 0, false);
    const bool f16 = dtype() == DType::F16;
    // With 3 keys or fewer batch item 1 sees only its padding: finite (the mask is), and
    // never used, so only that is checked (scores near -30000 keep ~1e-3 of their spread).
    const size_t real = keys <= 3 ? W : want.size();
    auto got = download_as(ctx(), x, want.size(), dtype());
    for (size_t j = real; j < got.size(); ++j) EXPECT_TRUE(std::isfinite(got[j]));
    got.resize(real);
    EXPECT_TRUE(close(got, std::vector<double>(want.begin(), want.begin() + long(real)),
                      std::vector<double>(scale.begin(), scale.begin() + long(real)), f16 ? 1e-3 : 4e-5, f16 ? 6e-8 : 0));
  }
  }
}

// Every key of a batch item masked: NaN, like PyTorch's softmax over all -inf; the
// projection carries it.
TEST_P(DecodeAttentionTest, FullyMaskedQueryGivesNaN) {
  const uint32_t d = 8, L = 300;  // several stretches under the portable profile
  std::vector<double> q(2 * d, 0.1), k(2 * L * d, 0.2), v(2 * L * d, 0.3), mask(2 * L, 0.0);
  for (uint32_t j = 0; j < L; ++j) mask[j] = -INFINITY;  // batch item 0: nothing to attend to
  std::vector<double> w(d * d, 0.0);
  for (uint32_t i = 0; i < d; ++i) w[i * d + i] = 1;  // the identity
  Buffer bq = upload_as(ctx(), q, dtype(), "q"), bk = upload_as(ctx(), k, dtype(), "k");
  Buffer bv = upload_as(ctx(), v, dtype(), "v"), bm = upload_as(ctx(), mask, dtype(), "m");
  Buffer bw = upload_as(ctx(), w, dtype(), "w");
  const Attention a{.batch = 2, .heads = 1, .head_dim = d, .q_len = 1, .kv_len = L};
  Ops o = ops();
  Buffer scratch = upload_u32(ctx(), std::vector<uint32_t>(o.decode_attention_scratch_bytes(a, d) / 4, 0), "scratch");
  for (bool projected : {false, true}) {
    Buffer bo = poisoned_finite(ctx(), q.size(), dtype(), "o");  // so a skipped query cannot pass as NaN
    auto cl = ctx().command_list();
    o.decode_attention(cl, a, bq.view(), bk.view(), bv.view(), bo.view(), scratch.view(), bm.view(), std::nullopt,
                       projected ? std::optional(AttentionProjection{.weight = bw.view(), .N = d}) : std::nullopt);
    cl.submit();
    auto out = download_as(ctx(), bo, q.size(), dtype());
    for (uint32_t e = 0; e < d; ++e) {
      EXPECT_TRUE(std::isnan(out[e])) << projected;
      EXPECT_NEAR(out[d + e], 0.3, 1e-3) << projected;
    }
  }
}

TEST_P(DecodeAttentionTest, WrongSettingsAreClearErrors) {
  Buffer b = upload_u32(ctx(), std::vector<uint32_t>(1024, 0), "inputs");
  Buffer out = ctx().buffer(4096, "out"), scratch = upload_u32(ctx(), std::vector<uint32_t>(1024, 0), "scratch");
  Ops o = ops();
  auto cl = ctx().command_list();
  auto message = [&](const Attention& a, const std::optional<AttentionProjection>& p = std::nullopt,
                     uint64_t scratch_bytes = 4096) {
    try {
      o.decode_attention(cl, a, b.view(), b.view(), b.view(), out.view(), scratch.view(0, scratch_bytes), std::nullopt,
                         std::nullopt, p);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const Attention ok{.batch = 1, .heads = 2, .head_dim = 8, .q_len = 1, .kv_len = 4};
  Attention two = ok;
  two.q_len = 2;
  EXPECT_NE(message(two).find("q_len 1"), std::string::npos) << message(two);
  Attention causal = ok;
  causal.causal = true;
  EXPECT_NE(message(causal).find("causal"), std::string::npos);
  Attention wide = ok;
  wide.head_dim = 129;
  EXPECT_NE(message(wide).find("head_dim 129"), std::string::npos);
  EXPECT_NE(message(ok, std::nullopt, 8).find("scratch needs"), std::string::npos) << message(ok, std::nullopt, 8);
  EXPECT_NE(message(ok, AttentionProjection{.weight = b.view(), .residual_norm = NormWeights{b.view(), b.view()}, .N = 4})
                .find("needs a residual"),
            std::string::npos);
  EXPECT_NE(message(ok, AttentionProjection{.weight = b.view(0, 16), .N = 4}).find("projection weight needs"),
            std::string::npos);
  EXPECT_EQ(message(ok), "no error");
  cl.submit();
}

// The policy routes a decode step's output projection into the attention or to a GEMM.
TEST_F(GpuTest, DecodeProjectionFollowsThePolicy) {
  const Ops o(ctx(), DType::F32);
  {
    const ScopedPolicy route(ctx(), [](Policy& p) { p.decode_projection = DecodeProjection::Gemm; });
    EXPECT_FALSE(o.project_in_decode_attention());
  }
  const ScopedPolicy route(ctx(), [](Policy& p) { p.decode_projection = DecodeProjection::Attention; });
  EXPECT_TRUE(o.project_in_decode_attention());
}

VKF_FOR_EACH_DTYPE(DecodeAttentionTest);

}  // namespace
}  // namespace vkf::test
