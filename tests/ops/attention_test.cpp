// Every fused attention kernel valid on the device (or profile) against the double
// reference and against the unfused path.
// Tolerance: each output is a convex combination of values, computed in fp32 with an
// online softmax: errors grow with sum_j p_j |v_j| (the reference's scale), a few
// 2^-24 per exp/rescale step over up to ~1000 keys: 2e-5. fp16 storage: rounding of
// q, k, v happens before the reference, the output rounds once: 1e-3. The unfused fp16
// path also stores the scores and the probabilities in fp16 (unit roundoff u = 2^-11):
// a score s moves by up to |s| u, which moves each probability by a factor of up to
// exp(2 max|s| u) (numerator and normaliser), and the stored probability and the output
// round once more each: rtol = u (2 max|s| + 2), max|s| over the case's scaled scores
// (2e-3 flat was 3% short at a seed whose scores reached ~3.6).
#include "support/ops_test.hpp"
#include "ops/reference.hpp"
#include "vkformer/gemm_tuning.hpp"

namespace vkf::test {
namespace {

struct Case {
  uint32_t batch, heads, head_dim, q_len, kv_len;
  bool causal, padding;
  uint32_t kv_heads = 0;  // 0: heads
  bool position_bias = false;  // an AttentionBias (the fused kernels only: the unfused path has none)
};

class AttentionTest : public OpsTest {
 protected:
  // The fused kernels that run here for this head size; each test runs them all.
  std::vector<AttentionKernel> kernels(uint32_t head_dim) {
    std::vector<AttentionKernel> valid;
    for (AttentionKernel k : kAttentionKernels)
      if (attention_kernel_problem(ctx().capabilities(), k, head_dim, dtype()).empty()) valid.push_back(k);
    EXPECT_FALSE(valid.empty()) << "no fused attention kernel runs head_dim " << head_dim;
    return valid;
  }

  // Runs every fused kernel and the unfused path on the same inputs, checks each against
  // the reference.
  void check(const Case& c, std::mt19937_64& rng) {
    const uint32_t kv_heads = c.kv_heads ? c.kv_heads : c.heads;
    SCOPED_TRACE("B=" + std::to_string(c.batch) + " H=" + std::to_string(c.heads) + " KVH=" + std::to_string(kv_heads) +
                 " d=" + std::to_string(c.head_dim) + " Lq=" + std::to_string(c.q_len) + " Lk=" +
                 std::to_string(c.kv_len) + (c.causal ? " causal" : "") + (c.padding ? " padding" : "") +
                 (c.position_bias ? " position bias" : ""));
    const uint32_t W = c.heads * c.head_dim, KW = kv_heads * c.head_dim;
    auto q = random_values(size_t(c.batch) * c.q_len * W, rng, -2, 2);
    auto k = random_values(size_t(c.batch) * c.kv_len * KW, rng, -2, 2);
    auto v = random_values(size_t(c.batch) * c.kv_len * KW, rng);
    std::vector<double> mask(size_t(c.batch) * c.kv_len, 0.0);
    if (c.padding)  // batch item b keeps its first kv_len - b*(kv_len/4 + 1) keys (at least 1)
      for (uint32_t b = 0; b < c.batch; ++b)
        for (uint32_t j = std::max<int64_t>(1, int64_t(c.kv_len) - b * (c.kv_len / 4 + 1)); j < c.kv_len; ++j)
          mask[size_t(b) * c.kv_len + j] = -INFINITY;
    for (auto* x : {&q, &k, &v})
      for (auto& e : *x) e = stored(e, dtype());
    Attention a{.batch = c.batch, .heads = c.heads, .head_dim = c.head_dim, .kv_heads = c.kv_heads, .q_len = c.q_len,
                .kv_len = c.kv_len, .causal = c.causal, .causal_offset = c.causal ? c.kv_len - c.q_len : 0};
    // A table of relative positions [heads, 2P - 1] with a margin of 3 beyond what the
    // pass reads on each side (P: the farthest a query and a key lie apart), fp32.
    ref::PositionBias bias;
    if (c.position_bias) {
      const uint32_t P = std::max(c.kv_len, a.causal_offset + c.q_len) + 3;
      bias = {random_values(size_t(c.heads) * (2 * P - 1), rng, -2, 2), 2 * P - 1, P - 1};
      for (auto& e : bias.table) e = double(float(e));
    }
    auto [want, scale] = ref::attention(a, q, k, v, c.padding ? &mask : nullptr, c.position_bias ? &bias : nullptr);
    double max_score = 0;  // max |q.k| / sqrt(d) over every (query, key) pair, masks aside (a bound)
    for (uint32_t b = 0; b < c.batch; ++b)
      for (uint32_t h = 0; h < c.heads; ++h)
        for (uint32_t i = 0; i < c.q_len; ++i)
          for (uint32_t j = 0; j < c.kv_len; ++j) {
            double dot = 0;
            for (uint32_t e = 0; e < c.head_dim; ++e)
              dot += q[(size_t(b) * c.q_len + i) * W + h * c.head_dim + e] *
                     k[(size_t(b) * c.kv_len + j) * KW + (h / (c.heads / kv_heads)) * c.head_dim + e];
            max_score = std::max(max_score, std::abs(dot) / std::sqrt(double(c.head_dim)));
          }
    const double unfused_f16_rtol = std::ldexp(1.0, -11) * (2 * max_score + 2);

    Buffer bq = upload_as(ctx(), q, dtype(), "q"), bk = upload_as(ctx(), k, dtype(), "k");
    Buffer bv = upload_as(ctx(), v, dtype(), "v"), bm = upload_as(ctx(), mask, dtype(), "mask");
    Buffer unfused = poisoned(ctx(), want.size(), dtype(), "o_unfused");
    Buffer scores = poisoned(ctx(), size_t(c.batch) * c.heads * c.q_len * c.kv_len, dtype(), "scores");
    const auto valid = kernels(c.head_dim);
    std::vector<Buffer> fused;
    auto cl = ctx().command_list();
    Ops o = ops();
    auto m = c.padding ? std::optional(bm.view()) : std::nullopt;
    Buffer table = upload_as(ctx(), c.position_bias ? bias.table : std::vector<double>{0.0}, DType::F32, "position bias");
    const auto b = c.position_bias ? std::optional(AttentionBias{table.view(), bias.positions, bias.origin}) : std::nullopt;
    for (AttentionKernel kernel : valid) {
      fused.push_back(poisoned(ctx(), want.size(), dtype(), "o_fused"));
      Attention ak = a;
      ak.kernel = kernel;
      o.attention(cl, ak, bq.view(), bk.view(), bv.view(), fused.back().view(), m, std::nullopt, b);
    }
    if (!c.position_bias) o.attention_unfused(cl, a, bq.view(), bk.view(), bv.view(), unfused.view(), scores.view(), m);
    cl.submit();
    const bool f16 = dtype() == DType::F16;
    auto got_unfused = download_as(ctx(), unfused, want.size(), dtype());
    // fp16 unfused also rounds the scores and probabilities to fp16 in memory (above).
    if (!c.position_bias)
      EXPECT_TRUE(close(got_unfused, want, scale, f16 ? unfused_f16_rtol : 2e-5, f16 ? 6e-8 : 0)) << "unfused";
    std::vector<double> both(scale.size());
    for (size_t i = 0; i < both.size(); ++i) both[i] = 2 * scale[i];
    for (size_t i = 0; i < valid.size(); ++i) {
      auto got = download_as(ctx(), fused[i], want.size(), dtype());
      EXPECT_TRUE(close(got, want, scale, f16 ? 1e-3 : 2e-5, f16 ? 6e-8 : 0)) << attention_kernel_name(valid[i]);
      if (!c.position_bias)
        EXPECT_TRUE(close(got, got_unfused, both, f16 ? (1e-3 + unfused_f16_rtol) / 2 : 2e-5, f16 ? 1.2e-7 : 0))
            << attention_kernel_name(valid[i]) << " vs unfused";
    }
  }
};

TEST_P(AttentionTest, SelfAttentionWithAndWithoutMasks) {
  auto seed = test_seed();
  VKF_SEED_TRACE(seed);
  std::mt19937_64 rng(seed);
  for (bool causal : {false, true})
    for (bool padding : {false, true}) {
      check({1, 1, 8, 1, 1, causal, padding}, rng);
      check({1, 2, 8, 3, 3, causal, padding}, rng);
      check({2, 3, 17, 17, 17, causal, padding}, rng);
      check({3, 2, 32, 70, 70, causal, padding}, rng);
    }
}

TEST_P(AttentionTest, CrossAttentionQueryAndKeyLengthsDiffer) {
  auto seed = test_seed();
  VKF_SEED_TRACE(seed);
  std::mt19937_64 rng(seed);
  check({2, 4, 8, 5, 33, false, true}, rng);
  check({1, 2, 64, 40, 3, false, false}, rng);
  check({2, 1, 24, 1, 255, false, true}, rng);  // a decode step over a long source
}

// Grouped-query attention: fewer K/V heads than query heads (Llama-family models), with
// every mask, at awkward sizes.
TEST_P(AttentionTest, GroupedKeyValueHeads) {
  auto seed = test_seed();
  VKF_SEED_TRACE(seed);
  std::mt19937_64 rng(seed);
  check({2, 8, 16, 17, 17, true, true, 2}, rng);
  check({1, 6, 64, 3, 255, false, true, 3}, rng);
  check({1, 4, 17, 1, 17, true, false, 1}, rng);  // one K/V head for all (multi-query)
  check({2, 4, 8, 255, 255, true, false, 2}, rng);
}

// An additive bias by relative position (AttentionBias: T5's buckets, ALiBi), per head,
// on every fused kernel: self-attention with and without masks, queries at an offset
// (a decoder's pass after cached keys), grouped K/V heads, a single query over many keys.
TEST_P(AttentionTest, PositionBiasByRelativePosition) {
  auto seed = test_seed();
  VKF_SEED_TRACE(seed);
  std::mt19937_64 rng(seed);
  for (bool causal : {false, true})
    for (bool padding : {false, true}) {
      check({.batch = 1, .heads = 1, .head_dim = 8, .q_len = 1, .kv_len = 1, .causal = causal, .padding = padding,
             .position_bias = true}, rng);
      check({.batch = 2, .heads = 3, .head_dim = 17, .q_len = 17, .kv_len = 17, .causal = causal,
             .padding = padding, .position_bias = true}, rng);
    }
  check({.batch = 1, .heads = 2, .head_dim = 32, .q_len = 3, .kv_len = 255, .causal = true, .padding = false,
         .position_bias = true}, rng);
  check({.batch = 2, .heads = 4, .head_dim = 16, .q_len = 70, .kv_len = 70, .causal = true, .padding = true,
         .kv_heads = 2, .position_bias = true}, rng);
  check({.batch = 1, .heads = 2, .head_dim = 64, .q_len = 1, .kv_len = 1000, .causal = true, .padding = false,
         .position_bias = true}, rng);
}

// A table that does not cover every (query, key) pair of the pass, or too small for its
// heads: refused by name, for attention and decode_attention alike.
TEST_P(AttentionTest, PositionBiasThatDoesNotCoverThePassIsRefused) {
  Buffer b = ctx().buffer(1 << 16, "operands"), table = ctx().buffer(4 * 2 * 19, "table");
  Ops o = ops();
  auto cl = ctx().command_list();
  const Attention a{.batch = 1, .heads = 2, .head_dim = 8, .q_len = 4, .kv_len = 10, .causal = true, .causal_offset = 6};
  auto refused = [&](const AttentionBias& bias, const std::string& words, bool decode) {
    SCOPED_TRACE(words);
    try {
      if (decode) {
        Attention d = a;
        d.q_len = 1, d.causal = false, d.causal_offset = 0;
        o.decode_attention(cl, d, b.view(), b.view(), b.view(), b.view(), b.view(), std::nullopt, std::nullopt,
                           std::nullopt, bias);
      } else {
        o.attention(cl, a, b.view(), b.view(), b.view(), b.view(), std::nullopt, std::nullopt, bias);
      }
      ADD_FAILURE() << "accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
    }
  };
  for (bool decode : {false, true}) {
    refused({table.view(), 19, 8}, "not queries up to position 9 over 10 keys", decode);  // the last query: 9
    refused({table.view(), 18, 9}, "not queries up to position 9 over 10 keys", decode);  // keys up to +9 of 0
    refused({table.view(), 19, 19}, "origin 19 is outside its 19 positions", decode);
    refused({table.view(), 29, 14}, "less than 2 heads x 29 positions", decode);
  }
  cl.submit();
}

TEST_P(AttentionTest, HeadDimsUpTo128AndLongSequences) {
  auto seed = test_seed();
  VKF_SEED_TRACE(seed);
  std::mt19937_64 rng(seed);
  check({1, 2, 128, 9, 130, false, false}, rng);
  check({1, 2, 17, 255, 255, true, true}, rng);
  check({1, 1, 64, 200, 1030, true, false}, rng);  // causal_offset = 830: a cache already holding keys
  check({1, 1, 128, 17, 1030, false, true}, rng);
  check({1, 2, 8, 1030, 1030, true, false, 1}, rng);
}

// K/V read from a decoding cache [B, H, Lmax, d] while Q is a single new token.
TEST_P(AttentionTest, ReadsKeysAndValuesFromADecodeCache) {
  auto seed = test_seed();
  VKF_SEED_TRACE(seed);
  std::mt19937_64 rng(seed);
  // d = 64: the direct kernel reads the cache as texels on CPU drivers (16 per lane: not).
  for (const uint32_t d : {16u, 64u}) {
    SCOPED_TRACE("d=" + std::to_string(d));
    const uint32_t B = 2, H = 3, Lmax = 40, filled = 11;
    auto q = random_values(size_t(B) * H * d, rng), cache_k = random_values(size_t(B) * H * Lmax * d, rng);
    auto cache_v = random_values(cache_k.size(), rng);
    for (auto* x : {&q, &cache_k, &cache_v})
      for (auto& e : *x) e = stored(e, dtype());
    // The same keys packed [B, filled, H*d] for the reference.
    std::vector<double> k(size_t(B) * filled * H * d), v(k.size());
    for (uint32_t b = 0; b < B; ++b)
      for (uint32_t h = 0; h < H; ++h)
        for (uint32_t j = 0; j < filled; ++j)
          for (uint32_t e = 0; e < d; ++e) {
            k[((size_t(b) * filled + j) * H + h) * d + e] = cache_k[((size_t(b) * H + h) * Lmax + j) * d + e];
            v[((size_t(b) * filled + j) * H + h) * d + e] = cache_v[((size_t(b) * H + h) * Lmax + j) * d + e];
          }
    Attention a{.batch = B, .heads = H, .head_dim = d, .q_len = 1, .kv_len = filled, .causal = true,
                .causal_offset = filled - 1};
    auto [want, scale] = ref::attention(a, q, k, v, nullptr);
    a.kv_batch_stride = uint64_t(H) * Lmax * d;
    a.kv_head_stride = uint64_t(Lmax) * d;
    a.kv_row_stride = d;
    Buffer bq = upload_as(ctx(), q, dtype(), "q"), bk = upload_as(ctx(), cache_k, dtype(), "k_cache");
    Buffer bv = upload_as(ctx(), cache_v, dtype(), "v_cache"), bo = poisoned(ctx(), want.size(), dtype(), "o");
    Buffer bo2 = poisoned(ctx(), want.size(), dtype(), "o2"), scores = poisoned(ctx(), B * H * filled, dtype(), "s");
    auto cl = ctx().command_list();
    Ops o = ops();
    o.attention(cl, a, bq.view(), bk.view(), bv.view(), bo.view());
    o.attention_unfused(cl, a, bq.view(), bk.view(), bv.view(), bo2.view(), scores.view());
    cl.submit();
    const bool f16 = dtype() == DType::F16;
    EXPECT_TRUE(close(download_as(ctx(), bo, want.size(), dtype()), want, scale, f16 ? 1e-3 : 2e-5, f16 ? 6e-8 : 0));
    EXPECT_TRUE(close(download_as(ctx(), bo2, want.size(), dtype()), want, scale, f16 ? 2e-3 : 2e-5, f16 ? 6e-8 : 0));
  }
}

// A replayed decode step: the kernel takes kv_len and the causal offset from the step
// state on the GPU (key_count = filled), not from the descriptor, whose kv_len is the
// cache's capacity. Same answer as the recorded pass above. Batch item 2 is left-padded
// by 2 keys, which its padding mask ([B, capacity], finite as decoder-only batches mask)
// drops at every step.
TEST_P(AttentionTest, TakesTheKeyCountFromADecodeStep) {
  auto seed = test_seed();
  VKF_SEED_TRACE(seed);
  std::mt19937_64 rng(seed);
  // d = 32: K and V as texels on CPU drivers (8: storage buffers).
  for (const uint32_t d : {8u, 32u}) {
    SCOPED_TRACE("d=" + std::to_string(d));
    const uint32_t B = 3, H = 2, capacity = 17;
    auto q = random_values(size_t(B) * H * d, rng), kv = random_values(size_t(B) * capacity * 2 * H * d, rng);
    for (auto* x : {&q, &kv})
      for (auto& e : *x) e = stored(e, dtype());
    Buffer bq = upload_as(ctx(), q, dtype(), "q"), bkv = upload_as(ctx(), kv, dtype(), "kv_cache");
    Buffer state = upload_u32(ctx(), {0, 0, 0}, "decode_step");
    std::vector<double> mask(size_t(B) * capacity, 0.0);
    mask[2 * capacity] = mask[2 * capacity + 1] = -30000.0;
    Buffer bm = upload_as(ctx(), mask, dtype(), "mask");
    const uint64_t e = dtype_bytes(dtype());
    Attention a{.batch = B, .heads = H, .head_dim = d, .q_len = 1, .kv_len = capacity, .causal = true,
                .kv_batch_stride = uint64_t(capacity) * 2 * H * d,
                .kv_row_stride = 2 * H * d};  // [B, capacity, 2, H*d]
    const DecodeStep step{.state = state.view(), .max_step = capacity - 1};
    Ops o = ops();
    auto cl = ctx().command_list();  // recorded once, replayed at every key count; every kernel
    const auto valid = kernels(d);
    std::vector<Buffer> outs;
    for (AttentionKernel kernel : valid) {
      outs.push_back(poisoned(ctx(), q.size(), dtype(), "o"));
      Attention ak = a;
      ak.kernel = kernel;
      o.attention(cl, ak, bq.view(), bkv.view(), bkv.view(H * d * e), outs.back().view(), bm.view(), step);
    }
    const Buffer& bo = outs.front();
    for (uint32_t keys : {1u, 2u, 11u, capacity}) {
      const DecodeStep::State st{.step = keys - 1, .position = keys - 1, .key_count = keys};
      ctx().upload(state, &st, sizeof st);
      cl.submit();
      std::vector<double> k(size_t(B) * keys * H * d), v(k.size());  // the first `keys` rows, packed
      for (uint32_t b = 0; b < B; ++b)
        for (uint32_t j = 0; j < keys; ++j)
          for (uint32_t c = 0; c < H * d; ++c) {
            k[(size_t(b) * keys + j) * H * d + c] = kv[(size_t(b) * capacity + j) * 2 * H * d + c];
            v[(size_t(b) * keys + j) * H * d + c] = kv[(size_t(b) * capacity + j) * 2 * H * d + H * d + c];
          }
      std::vector<double> packed_mask(size_t(B) * keys);
      for (uint32_t b = 0; b < B; ++b)
        for (uint32_t j = 0; j < keys; ++j) packed_mask[size_t(b) * keys + j] = mask[size_t(b) * capacity + j];
      const Attention packed{.batch = B, .heads = H, .head_dim = d, .q_len = 1, .kv_len = keys, .causal = true,
                             .causal_offset = keys - 1};
      auto [want, scale] = ref::attention(packed, q, k, v, &packed_mask);
      const bool f16 = dtype() == DType::F16;
      // With 2 keys or fewer batch item 2 sees only its padding: finite (the mask is), and
      // never used, so only that is checked (scores near -30000 keep ~1e-3 of their spread).
      const size_t real = keys <= 2 ? size_t(2) * H * d : want.size();
      for (size_t i = 0; i < valid.size(); ++i) {
        auto got = download_as(ctx(), outs[i], want.size(), dtype());
        for (size_t j = real; j < got.size(); ++j)
          EXPECT_TRUE(std::isfinite(got[j])) << attention_kernel_name(valid[i]);
        got.resize(real);
        EXPECT_TRUE(close(got, std::vector<double>(want.begin(), want.begin() + long(real)),
                          std::vector<double>(scale.begin(), scale.begin() + long(real)), f16 ? 1e-3 : 2e-5,
                          f16 ? 6e-8 : 0))
            << keys << " keys, " << attention_kernel_name(valid[i]);
      }
    }
    // A step that could reach past kv_len, or a padding mask narrower than [B, capacity]: clear errors.
    auto cl2 = ctx().command_list();
    EXPECT_THROW(o.attention(cl2, a, bq.view(), bkv.view(), bkv.view(H * d * e), bo.view(), std::nullopt,
                             DecodeStep{.state = state.view(), .max_step = capacity}),
                 Error);
    EXPECT_THROW(o.attention(cl2, a, bq.view(), bkv.view(), bkv.view(H * d * e), bo.view(),
                             bm.view(0, (uint64_t(B) * capacity - 1) * e), step),
                 Error);
    cl2.submit();
  }
}

// The direct kernel reads K and V as texels where their views start on aligned texels
// and rows on whole vec4s (CPU drivers), and from storage buffers otherwise: views 4 and
// 1 elements into their buffers give the reference's answer either way, for one query
// (a decode step's variant) and for several.
TEST_P(AttentionTest, KeysAndValuesAtAnyOffsetAsTexelsOrBuffers) {
  auto seed = test_seed();
  VKF_SEED_TRACE(seed);
  std::mt19937_64 rng(seed);
  const uint32_t B = 2, H = 2, d = 64, L = 19;
  const uint64_t e = dtype_bytes(dtype());
  for (const uint32_t q_len : {1u, 5u})
    for (const uint32_t shift : {0u, 4u, 1u}) {
      SCOPED_TRACE("q_len=" + std::to_string(q_len) + " shift=" + std::to_string(shift));
      auto q = random_values(size_t(B) * q_len * H * d, rng), k = random_values(size_t(B) * L * H * d, rng);
      auto v = random_values(k.size(), rng);
      for (auto* x : {&q, &k, &v})
        for (auto& x1 : *x) x1 = stored(x1, dtype());
      const Attention a{.batch = B, .heads = H, .head_dim = d, .q_len = q_len, .kv_len = L, .causal = q_len > 1,
                        .causal_offset = q_len > 1 ? L - q_len : 0};
      auto [want, scale] = ref::attention(a, q, k, v, nullptr);
      std::vector<double> k_shifted(shift, 7.0), v_shifted(shift, -7.0);  // what the views skip
      k_shifted.insert(k_shifted.end(), k.begin(), k.end());
      v_shifted.insert(v_shifted.end(), v.begin(), v.end());
      Buffer bq = upload_as(ctx(), q, dtype(), "q"), bk = upload_as(ctx(), k_shifted, dtype(), "k");
      Buffer bv = upload_as(ctx(), v_shifted, dtype(), "v"), bo = poisoned(ctx(), want.size(), dtype(), "o");
      Ops o = ops();
      auto cl = ctx().command_list();
      o.attention(cl, a, bq.view(), bk.view(shift * e), bv.view(shift * e), bo.view());
      cl.submit();
      const bool f16 = dtype() == DType::F16;
      EXPECT_TRUE(close(download_as(ctx(), bo, want.size(), dtype()), want, scale, f16 ? 1e-3 : 2e-5, f16 ? 6e-8 : 0));
    }
}

// Every key of a batch item masked: NaN, like PyTorch's softmax over all -inf.
TEST_P(AttentionTest, FullyMaskedQueryGivesNaN) {
  const uint32_t d = 8;
  std::vector<double> q(2 * d, 0.1), k(2 * 3 * d, 0.2), v(2 * 3 * d, 0.3), mask(2 * 3, 0.0);
  for (int j = 0; j < 3; ++j) mask[j] = -INFINITY;  // batch item 0: nothing to attend to
  Buffer bq = upload_as(ctx(), q, dtype(), "q"), bk = upload_as(ctx(), k, dtype(), "k");
  Buffer bv = upload_as(ctx(), v, dtype(), "v"), bm = upload_as(ctx(), mask, dtype(), "m");
  Buffer bo = poisoned_finite(ctx(), q.size(), dtype(), "o");  // so a skipped query cannot pass as NaN
  auto cl = ctx().command_list();
  Ops o = ops();
  o.attention(cl, {.batch = 2, .heads = 1, .head_dim = d, .q_len = 1, .kv_len = 3}, bq.view(), bk.view(), bv.view(),
              bo.view(), bm.view());
  cl.submit();
  auto out = download_as(ctx(), bo, q.size(), dtype());
  for (uint32_t e = 0; e < d; ++e) {
    EXPECT_TRUE(std::isnan(out[e]));
    EXPECT_NEAR(out[d + e], 0.3, 1e-3);
  }
}

TEST_P(AttentionTest, WrongShapesAreClearErrors) {
  Buffer b = ctx().buffer(256, "small");
  auto cl = ctx().command_list();
  Ops o = ops();
  try {
    o.attention(cl, {.batch = 2, .heads = 4, .head_dim = 64, .q_len = 10, .kv_len = 10}, b.view(), b.view(), b.view(),
                b.view());
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("attention: q needs"), std::string::npos) << e.what();
  }
  EXPECT_THROW(o.attention(cl, {.head_dim = 0}, b.view(), b.view(), b.view(), b.view()), Error);
  try {  // K/V heads that do not divide the query heads
    o.attention(cl, {.heads = 6, .head_dim = 2, .kv_heads = 4}, b.view(), b.view(), b.view(), b.view());
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("kv_heads (4) must divide heads (6)"), std::string::npos) << e.what();
  }
  // A kernel this device cannot run, asked for by name: refused, saying why.
  for (AttentionKernel k : kAttentionKernels)
    if (const std::string why = attention_kernel_problem(ctx().capabilities(), k, 8, dtype()); !why.empty()) {
      try {
        o.attention(cl, {.head_dim = 8, .kernel = k}, b.view(), b.view(), b.view(), b.view());
        FAIL() << attention_kernel_name(k);
      } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
      }
    }
  cl.submit();
}

VKF_FOR_EACH_DTYPE(AttentionTest);

}  // namespace
}  // namespace vkf::test
