#include "support/ops_test.hpp"

#include <sstream>

#include "vkformer/half.hpp"
#include "vkformer/tensor_io.hpp"

namespace vkf::test {

namespace {
struct ProfileContext {
  MessageLog log;
  std::unique_ptr<Context> ctx;
};
ProfileContext contexts[2];  // [portable], made on first use

ProfileContext& profile_context(bool portable) {
  ProfileContext& p = contexts[portable ? 1 : 0];
  if (!p.ctx) {
    ContextOptions o = test_options(p.log);
    o.profile = portable ? "portable" : "";
    p.ctx = std::make_unique<Context>(o);
  }
  return p;
}

// The contexts go before main returns, not as statics during exit(): by then the
// validation layer may already be torn down, and ~Context still talks to the driver
// (it saves the pipeline cache) - on NVIDIA's driver that crashed at exit.
struct ReleaseProfileContexts : ::testing::Environment {
  void TearDown() override {
    for (auto& p : contexts) p.ctx.reset();
  }
};
[[maybe_unused]] const auto* const release_profile_contexts =
    ::testing::AddGlobalTestEnvironment(new ReleaseProfileContexts);

}  // namespace

Context& OpsTest::context(bool portable) { return *profile_context(portable).ctx; }

void OpsTest::SetUp() {
  ASSERT_TRUE(ctx().validation_enabled()) << "the Khronos validation layer is required for tests";
  messages_before_ = ctx().validation_messages();
}

void OpsTest::TearDown() {
  EXPECT_EQ(ctx().validation_messages(), messages_before_)
      << "validation layer messages:\n" << profile_context(GetParam().portable).log.joined();
}

std::string ops_param_name(const ::testing::TestParamInfo<OpsParam>& info) {
  return std::string(to_string(info.param.dtype)) + (info.param.portable ? "_portable" : "");
}

uint16_t to_half(float f) { return float_to_half(f); }
float from_half(uint16_t h) { return half_to_float(h); }

std::vector<double> random_values(size_t n, std::mt19937_64& rng, double lo, double hi) {
  std::uniform_real_distribution<double> d(lo, hi);
  std::vector<double> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

Buffer upload_as(Context& ctx, const std::vector<double>& v, DType t, const char* name) {
  const size_t n = std::max<size_t>(v.size(), 1);
  Buffer b = ctx.buffer(n * dtype_bytes(t), name);
  if (t == DType::F16) {
    std::vector<uint16_t> h(n, 0);
    for (size_t i = 0; i < v.size(); ++i) h[i] = to_half(float(v[i]));
    ctx.upload(b, h.data(), h.size() * 2);
  } else {
    std::vector<float> f(n, 0.0f);
    for (size_t i = 0; i < v.size(); ++i) f[i] = float(v[i]);
    ctx.upload(b, f.data(), f.size() * 4);
  }
  return b;
}

Buffer poisoned(Context& ctx, size_t n, DType t, const char* name) {
  const size_t bytes = (std::max<size_t>(n, 1) * dtype_bytes(t) + 3) / 4 * 4;
  Buffer b = ctx.buffer(bytes, name);
  auto cl = ctx.command_list();
  cl.fill(b.view(), t == DType::F16 ? 0x7e007e00u : 0x7fc00000u);  // quiet NaNs
  cl.submit();
  return b;
}

Buffer poisoned_finite(Context& ctx, size_t n, DType t, const char* name) {
  return upload_as(ctx, std::vector<double>(std::max<size_t>(n, 1), kFinitePoison), t, name);
}

std::vector<double> download_as(Context& ctx, const Buffer& b, size_t n, DType t) {
  const std::vector<float> f = download_floats(ctx, b, n, t);
  return {f.begin(), f.end()};
}

std::vector<uint32_t> download_u32(Context& ctx, const Buffer& b, size_t n) {
  std::vector<uint32_t> v(n);
  ctx.download(b, v.data(), n * 4);
  return v;
}

Buffer upload_u32(Context& ctx, const std::vector<uint32_t>& v, const char* name) {
  Buffer b = ctx.buffer(std::max<size_t>(v.size(), 1) * 4, name);
  if (!v.empty()) ctx.upload(b, v.data(), v.size() * 4);
  return b;
}

::testing::AssertionResult close(const std::vector<double>& got, const std::vector<double>& want,
                                 const std::vector<double>& scale, double rtol, double atol) {
  if (got.size() != want.size()) return ::testing::AssertionFailure() << "sizes differ";
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i])) {
      if (!std::isnan(got[i])) return ::testing::AssertionFailure() << "element " << i << " is " << got[i] << ", expected NaN";
      continue;
    }
    const double err = std::abs(got[i] - want[i]);
    const double bound = rtol * scale[i] + atol;
    if (!(err <= bound))
      return ::testing::AssertionFailure() << "element " << i << " of " << got.size() << " is " << got[i]
                                           << ", expected " << want[i] << " (error " << err << " > bound " << bound
                                           << " = " << rtol << " * " << scale[i] << " + " << atol << ")";
    if (scale[i] > 0) worst = std::max(worst, err / scale[i]);
  }
  return ::testing::AssertionSuccess() << "worst relative error " << worst;
}

}  // namespace vkf::test
