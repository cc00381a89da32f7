// Shader compile errors and the on-disk SPIR-V and pipeline caches.
#include <filesystem>
#include <fstream>

#include "support/gpu_test.hpp"

namespace fs = std::filesystem;

namespace vkf::test {
namespace {

const char* kBroken = R"(#version 450
layout(local_size_x = 64) in;
layout(std430, binding = 0) buffer Y { float y[]; };
void main() {
  y[gl_GlobalInvocationID.x] = undeclared_thing * 2.0;
}
)";

class Shaders : public GpuTest {};

TEST_F(Shaders, CompileErrorNamesShaderVariantAndLine) {
  try {
    ctx().kernel({.shader = "broken.comp", .source = kBroken, .defines = {{"TILE", "32"}, {"VKF_FP16_STORAGE", "1"}}});
    FAIL() << "a broken shader compiled";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("shader 'broken.comp'"), std::string::npos) << m;
    EXPECT_NE(m.find("TILE=32 VKF_FP16_STORAGE=1"), std::string::npos) << m;
    EXPECT_NE(m.find("broken.comp:5"), std::string::npos) << m;
    EXPECT_NE(m.find("undeclared_thing"), std::string::npos) << m;
  }
}

TEST_F(Shaders, UnknownShaderIsAClearError) {
  try {
    ctx().kernel({.shader = "no_such_kernel.comp"});
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("unknown shader 'no_such_kernel.comp'"), std::string::npos) << e.what();
  }
}

TEST_F(Shaders, EqualDescriptionsShareOnePipeline) {
  KernelDesc d{.shader = "self_test.comp", .bindings = 2, .push_constant_bytes = 8, .spec_constants = {32}};
  auto compiled = ctx().cache_stats().compiled;
  Kernel a = ctx().kernel(d);
  Kernel b = ctx().kernel(d);
  EXPECT_LE(ctx().cache_stats().compiled, compiled + 1);
  d.spec_constants = {16};  // another specialization is another pipeline, same SPIR-V key family
  Kernel c = ctx().kernel(d);
  EXPECT_TRUE(a && b && c);
}

// Runs the self-test kernel in a fresh context on `dir` and returns its cache stats.
CacheStats run_with_cache(const std::string& dir, MessageLog& log) {
  auto o = test_options(log);
  o.cache_dir = dir;
  Context ctx(o);
  auto r = self_test(ctx);
  EXPECT_TRUE(r.passed) << r.detail;
  EXPECT_EQ(ctx.validation_messages(), 0u) << log.joined();
  return ctx.cache_stats();
}

std::vector<fs::path> spirv_files(const std::string& dir) {
  std::vector<fs::path> v;
  for (auto& e : fs::directory_iterator(fs::path(dir) / "spirv")) v.push_back(e.path());
  return v;
}

TEST(ShaderCache, SecondRunHitsTheSpirvAndPipelineCaches) {
  MessageLog log;
  const std::string dir = scratch_dir("hit");
  auto first = run_with_cache(dir, log);
  EXPECT_EQ(first.spirv_hits, 0u);
  EXPECT_EQ(first.compiled, 1u);
  EXPECT_FALSE(first.pipeline_cache_loaded);
  auto second = run_with_cache(dir, log);
  EXPECT_EQ(second.spirv_hits, 1u);
  EXPECT_EQ(second.compiled, 0u);
  EXPECT_TRUE(second.pipeline_cache_loaded);
}

TEST(ShaderCache, StaleEntryIsAMissAndIsRewritten) {
  MessageLog log;
  const std::string dir = scratch_dir("stale");
  run_with_cache(dir, log);
  auto files = spirv_files(dir);
  ASSERT_EQ(files.size(), 1u);
  // A file made for another key (another glslang, device or source) at this path:
  // flip one byte of the key hash in the header.
  {
    std::fstream f(files[0], std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(8);
    char c;
    f.read(&c, 1);
    c ^= 0x55;
    f.seekp(8);
    f.write(&c, 1);
  }
  auto stats = run_with_cache(dir, log);
  EXPECT_EQ(stats.spirv_rejected, 1u);
  EXPECT_EQ(stats.compiled, 1u);
  auto again = run_with_cache(dir, log);  // rewritten: a hit now
  EXPECT_EQ(again.spirv_hits, 1u);
}

TEST(ShaderCache, CorruptOrTruncatedFilesAreMissesNotCrashes) {
  MessageLog log;
  const std::string dir = scratch_dir("corrupt");
  run_with_cache(dir, log);
  auto files = spirv_files(dir);
  ASSERT_EQ(files.size(), 1u);
  auto size = fs::file_size(files[0]);
  // Flip a payload byte: the checksum must catch it.
  {
    std::fstream f(files[0], std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(std::streamoff(size - 9));
    f.write("\x7f", 1);
  }
  auto flipped = run_with_cache(dir, log);
  EXPECT_EQ(flipped.spirv_rejected, 1u);
  EXPECT_EQ(flipped.compiled, 1u);
  // Truncate it, and garble the pipeline cache too.
  fs::resize_file(files[0], size / 2);
  for (auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().rfind("pipelines-", 0) == 0) {
      std::ofstream f(e.path(), std::ios::binary | std::ios::trunc);
      f << "not a pipeline cache at all";
    }
  auto truncated = run_with_cache(dir, log);
  EXPECT_EQ(truncated.spirv_rejected, 1u);
  EXPECT_FALSE(truncated.pipeline_cache_loaded);
  // Empty file.
  { std::ofstream f(files[0], std::ios::binary | std::ios::trunc); }
  auto empty = run_with_cache(dir, log);
  EXPECT_EQ(empty.spirv_rejected, 1u);
}

TEST(ShaderCache, CanBeTurnedOff) {
  MessageLog log;
  auto o = test_options(log);
  o.disk_cache = false;
  Context ctx(o);
  EXPECT_EQ(ctx.cache_dir(), "");
  EXPECT_TRUE(self_test(ctx).passed);
}

// VKF_PIPELINE_STATS=1: each pipeline created reports the driver's statistics on stderr,
// or, where the driver offers none (lavapipe), one line says so; any other value is
// refused by name before a device is made.
TEST(PipelineStatistics, ReportedOrSaidUnavailableAndTheSwitchTakesZeroOrOne) {
  MessageLog log;
  {
    const ScopedEnv stats("VKF_PIPELINE_STATS", "yes");
    try {
      Context ctx(test_options(log));
      ADD_FAILURE() << "no error for VKF_PIPELINE_STATS=yes";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("VKF_PIPELINE_STATS must be 0 or 1, not 'yes'"), std::string::npos)
          << e.what();
    }
  }
  const ScopedEnv stats("VKF_PIPELINE_STATS", "1");
  ContextOptions o = test_options(log);
  o.cache_dir = scratch_dir("pipeline-stats");  // a fresh pipeline, not one from the cache
  testing::internal::CaptureStderr();
  std::string err;
  {
    Context ctx(o);
    ctx.kernel({.shader = "self_test.comp", .bindings = 2, .push_constant_bytes = 8, .spec_constants = {32}});
    err = testing::internal::GetCapturedStderr();
    EXPECT_EQ(ctx.validation_messages(), 0u) << log.joined();
  }
  const bool reported = err.find("vkformer: pipeline statistics: self_test.comp|") != std::string::npos;
  const bool unavailable = err.find("offers no pipeline statistics (VK_KHR_pipeline_executable_properties)") !=
                           std::string::npos;
  EXPECT_NE(reported, unavailable) << err;
}

}  // namespace
}  // namespace vkf::test
