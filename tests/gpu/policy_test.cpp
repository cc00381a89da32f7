// The policy: read from the environment once when a context is made, or given in its
// options; what the kernels then choose follows the context's policy, never the
// environment of the moment.
#include "support/gpu_test.hpp"
#include "vkformer/gemm_tuning.hpp"

namespace vkf::test {
namespace {

TEST(Policy, ReadFromTheEnvironmentEachVariableChecked) {
  {
    const ScopedEnv fold("VKF_FOLD_NORMS", "1"), route("VKF_DECODE_PROJECTION", "attention"),
        tiles("VKF_GEMM_TILES", "direct:16,64,4,16,2"), emulate("VKF_EMULATE_COOPMAT", "1"),
        stats("VKF_PIPELINE_STATS", "0");
    const Policy p = Policy::from_environment();
    EXPECT_EQ(p.fold_norms, true);
    EXPECT_EQ(p.decode_projection, DecodeProjection::Attention);
    EXPECT_EQ(p.gemm_tiles, (GemmTiles{16, 64, 4, 16, 2, GemmStrategy::Direct}));
    EXPECT_TRUE(p.emulate_coopmat);
    EXPECT_FALSE(p.pipeline_stats);
  }
  for (const auto& [name, value, words] : std::vector<std::tuple<const char*, const char*, std::string>>{
           {"VKF_FOLD_NORMS", "yes", "VKF_FOLD_NORMS must be 0 or 1, not 'yes'"},
           {"VKF_DECODE_PROJECTION", "fused", "'attention' or 'gemm', not 'fused'"},
           {"VKF_GEMM_TILES", "16,64,4", "VKF_GEMM_TILES: gemm tiles '16,64,4' must be bm,bn,bk,tm,tn"},
           {"VKF_GEMM_TILES", "16,64,4,16,2x", "must be bm,bn,bk,tm,tn"},
           {"VKF_EMULATE_COOPMAT", "yes", "VKF_EMULATE_COOPMAT must be 0 or 1, not 'yes'"},
           {"VKF_PIPELINE_STATS", "2", "VKF_PIPELINE_STATS must be 0 or 1, not '2'"}}) {
    const ScopedEnv bad(name, value);
    try {
      Policy::from_environment();
      ADD_FAILURE() << name << "=" << value << " accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
    }
  }
}

TEST(Policy, DefaultsAndTheirNames) {
  const ScopedEnv fold("VKF_FOLD_NORMS", "0");  // unset below by a policy of its own
  const Policy p;
  EXPECT_EQ(p.settings(), (std::vector<std::pair<std::string, std::string>>{{"fold_norms", "device class"},
                                                                            {"decode_projection", "gemm"},
                                                                            {"gemm_tiles", "tuned or default"},
                                                                            {"emulate_coopmat", "off"},
                                                                            {"pipeline_stats", "off"}}));
  MessageLog log;
  ContextOptions o = test_options(log);
  o.policy = p;  // the options' policy, not the environment's
  Context ctx(o);
  EXPECT_EQ(ctx.policy(), p);
}

TEST(Policy, ReadOnceWhenTheContextIsMade) {
  MessageLog log;
  std::optional<Context> ctx;
  {
    const ScopedEnv fold("VKF_FOLD_NORMS", "1");
    ctx.emplace(test_options(log));
  }
  const ScopedEnv fold("VKF_FOLD_NORMS", "0");
  EXPECT_EQ(ctx->policy().fold_norms, true);
  EXPECT_TRUE(Ops(*ctx, DType::F32).fold_norms_in_decode_steps());
  EXPECT_TRUE(Ops(*ctx, DType::F32).fold_norms_in_encoder());
}

// What the kernels choose follows set_policy at once; the fixed settings refuse a change.
TEST(Policy, SetOnAContextSteersTheOps) {
  MessageLog log;
  ContextOptions o = test_options(log);
  o.policy = Policy{};
  Context ctx(o);
  const Ops ops(ctx, DType::F32);
  const Gemm g{.M = 100, .N = 256, .K = 64, .trans_b = true};
  const GemmTiles chosen = ops.gemm_tiles(g), by_default = ops.default_gemm_tiles(g);
  for (const bool fold : {false, true}) {
    ctx.set_policy(Policy{.fold_norms = fold});
    EXPECT_EQ(ops.fold_norms_in_decode_steps(), fold);
    EXPECT_EQ(ops.fold_norms_in_encoder(), fold);
  }
  ctx.set_policy(Policy{.decode_projection = DecodeProjection::Attention});
  EXPECT_TRUE(ops.project_in_decode_attention());
  // Tiles other than the device's choice, valid anywhere: the small 32-row tiled design.
  const GemmTiles other = chosen == GemmTiles{32, 64, 16, 4, 4} ? GemmTiles{64, 32, 16, 4, 4} : GemmTiles{32, 64, 16, 4, 4};
  ctx.set_policy(Policy{.gemm_tiles = other});
  EXPECT_EQ(ops.gemm_tiles(g), other);
  EXPECT_EQ(ops.default_gemm_tiles(g), by_default);  // the default table is the device's, whatever the policy
  const GemmTiles wanted{32, 128, 16, 4, 16};
  EXPECT_EQ(ops.gemm_tiles({.M = 100, .N = 256, .K = 64, .trans_b = true, .tiles = wanted}), wanted);  // a product's own first
  ctx.set_policy(Policy{.gemm_tiles = GemmTiles{4096, 4096, 16, 4, 4}});
  try {
    ops.gemm_tiles(g);
    ADD_FAILURE() << "tiles the device cannot run were used";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("the policy's tiles tiled 4096x4096x16/4x4"), std::string::npos) << e.what();
  }
  ctx.set_policy(Policy{});
  EXPECT_EQ(ops.gemm_tiles(g), chosen);
  for (const Policy& fixed : {Policy{.emulate_coopmat = true}, Policy{.pipeline_stats = true}}) {
    try {
      ctx.set_policy(fixed);
      ADD_FAILURE() << "a fixed setting changed";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("is fixed when the context is made"), std::string::npos) << e.what();
    }
  }
  EXPECT_EQ(ctx.policy(), Policy{});
  EXPECT_EQ(ctx.validation_messages(), 0u) << log.joined();
}

TEST(Policy, EmulationShowsInTheCapabilities) {
  MessageLog log;
  ContextOptions o = test_options(log);
  o.policy = Policy{.emulate_coopmat = true};
  Context ctx(o);
  EXPECT_TRUE(ctx.capabilities().cooperative_matrix_emulated);
  o.policy = Policy{};
  EXPECT_FALSE(Context(o).capabilities().cooperative_matrix_emulated);
}

}  // namespace
}  // namespace vkf::test
