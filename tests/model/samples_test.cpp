// The shipped translator (samples/dates) through vkformer, against what PyTorch
// answered on the same 1,000 held-out inputs with the same weights (heldout_torch.txt,
// recorded by tools/train_dates.py): they must agree example by example.
#include <filesystem>
#include <fstream>

#include "support/gpu_test.hpp"
#include "vkformer/model.hpp"
#include "vkformer/forecaster.hpp"
#include "vkformer/tokenizer.hpp"

namespace fs = std::filesystem;

namespace vkf::test {
namespace {

TEST_F(GpuTest, DateTranslatorAgreesWithPyTorchOnEveryHeldOutExample) {
  const fs::path dir = fs::path(VKF_SOURCE_DIR) / "samples" / "dates";
  ASSERT_TRUE(fs::exists(dir / "model.safetensors")) << "the shipped translator is missing";
  auto tokenizer = CharTokenizer::from_file((dir / "vocab.json").string());
  auto model = Model::load(ctx(), dir.string());
  Session session(model);
  std::ifstream tsv(dir / "heldout.tsv"), torch_out(dir / "heldout_torch.txt");
  std::vector<std::string> inputs, targets, torch_answers;
  for (std::string line; std::getline(tsv, line);) {
    auto tab = line.find('\t');
    inputs.push_back(line.substr(0, tab));
    targets.push_back(line.substr(tab + 1));
  }
  for (std::string line; std::getline(torch_out, line);) torch_answers.push_back(line);
  ASSERT_GE(inputs.size(), 1000u);
  ASSERT_EQ(torch_answers.size(), inputs.size());
  size_t agree = 0, correct = 0;
  for (size_t i = 0; i < inputs.size(); i += 100) {
    std::vector<std::vector<uint32_t>> batch;
    for (size_t k = i; k < std::min(inputs.size(), i + 100); ++k) batch.push_back(tokenizer.encode(inputs[k]));
    auto out = session.generate(batch, {.max_new_tokens = 16});
    for (size_t k = 0; k < out.size(); ++k) {
      const std::string answer = tokenizer.decode(out[k]);
      agree += answer == torch_answers[i + k];
      correct += answer == targets[i + k];
      EXPECT_EQ(answer, torch_answers[i + k]) << "input '" << inputs[i + k] << "'";
    }
  }
  RecordProperty("exact_match", std::to_string(correct) + "/" + std::to_string(inputs.size()));
  std::printf("date translator: %zu/%zu agree with PyTorch, %zu/%zu exactly right\n", agree, inputs.size(), correct,
              inputs.size());
  EXPECT_GE(double(correct) / inputs.size(), 0.95) << "the shipped model should be good at its task";
}

// The same held-out set with the translator's linear weights in llama.cpp's blocks
// (LoadOptions::weights, quantized at load; every weight is 128 wide, whole blocks): at
// Q8_0 it must score as in fp32 (within 2 of the 1,000 examples), and every answer of
// Q4_0 is counted and reported (docs/models.md), none asserted beyond 90% right.
TEST_F(GpuTest, DateTranslatorWithWeightsInBlocksScoresAsInFp32) {
  const fs::path dir = fs::path(VKF_SOURCE_DIR) / "samples" / "dates";
  auto tokenizer = CharTokenizer::from_file((dir / "vocab.json").string());
  std::ifstream tsv(dir / "heldout.tsv");
  std::vector<std::string> inputs, targets;
  for (std::string line; std::getline(tsv, line);) {
    auto tab = line.find('\t');
    inputs.push_back(line.substr(0, tab));
    targets.push_back(line.substr(tab + 1));
  }
  auto score = [&](const LoadOptions& o) {
    auto model = Model::load(ctx(), dir.string(), o);
    EXPECT_TRUE(!o.weights || model->checkpoint().weights_not_in_blocks.empty());
    Session session(model);
    size_t correct = 0;
    for (size_t i = 0; i < inputs.size(); i += 100) {
      std::vector<std::vector<uint32_t>> batch;
      for (size_t k = i; k < std::min(inputs.size(), i + 100); ++k) batch.push_back(tokenizer.encode(inputs[k]));
      auto out = session.generate(batch, {.max_new_tokens = 16});
      for (size_t k = 0; k < out.size(); ++k) correct += tokenizer.decode(out[k]) == targets[i + k];
    }
    return correct;
  };
  const size_t fp32 = score({}), q8 = score({.weights = BlockType::Q8_0}), q4 = score({.weights = BlockType::Q4_0});
  std::printf("date translator, exactly right of %zu: fp32 %zu, q8_0 %zu, q4_0 %zu\n", inputs.size(), fp32, q8, q4);
  EXPECT_LE(std::max(fp32, q8) - std::min(fp32, q8), 2u);
  // Q4_0 with the embeddings and the tied output projection at 4 bits too (llama.cpp keeps
  // the output projection at 6 bits in its Q4_0 files: a mix, issue 49): 428 of 1000 here,
  // 946 with them in fp32. Far above chance (a date right in every character), far below fp32.
  EXPECT_GE(double(q4) / inputs.size(), 0.35);
}

}  // namespace
}  // namespace vkf::test

namespace vkf::test {
namespace {

// The shipped forecaster against PyTorch's forecasts for the same test windows
// (test_torch.txt, recorded by tools/forecast.py). Tolerance 1e-4 of the forecasts'
// norm, as for the seq2seq goldens; and it must beat the naive last-value forecast.
// Its encoder runs the encoder-decoders' fused layers (each LayerNorm folded into the
// GEMMs that read it) on GPUs: checked here with the fold forced on as well.
void expect_forecaster_matches_pytorch(Context& ctx) {
  const fs::path dir = fs::path(VKF_SOURCE_DIR) / "samples" / "forecast";
  ASSERT_TRUE(fs::exists(dir / "model.safetensors")) << "the shipped forecaster is missing";
  auto model = Forecaster::load(ctx, dir.string());
  const auto& c = model->config();
  std::vector<float> series, want;
  std::ifstream s(dir / "test_series.txt"), t(dir / "test_torch.txt");
  for (float v; s >> v;) series.push_back(v);
  for (float v; t >> v;) want.push_back(v);
  const size_t n = series.size() - c.window - c.horizon + 1;
  ASSERT_EQ(want.size(), n * c.horizon);
  std::vector<float> windows;
  for (size_t i = 0; i < n; ++i) windows.insert(windows.end(), series.begin() + long(i), series.begin() + long(i + c.window));
  auto got = model->predict(windows);
  ASSERT_EQ(got.size(), want.size());
  double err = 0, norm = 0, mae = 0, naive = 0;
  for (size_t i = 0; i < n; ++i)
    for (uint32_t h = 0; h < c.horizon; ++h) {
      const size_t k = i * c.horizon + h;
      err += (got[k] - want[k]) * double(got[k] - want[k]);
      norm += double(want[k]) * want[k];
      mae += std::abs(got[k] - series[i + c.window + h]);
      naive += std::abs(series[i + c.window - 1] - series[i + c.window + h]);
    }
  EXPECT_LT(std::sqrt(err / norm), 1e-4);
  EXPECT_LT(mae, naive) << "the model should forecast better than repeating the last value";
  std::printf("forecaster: relative difference from PyTorch %.2e; MAE %.3f vs naive %.3f\n", std::sqrt(err / norm),
              mae / (n * c.horizon), naive / (n * c.horizon));
  EXPECT_THROW(model->predict(std::vector<float>(c.window + 1, 1.0f)), Error);
}

TEST_F(GpuTest, ForecasterMatchesPyTorchAndBeatsNaive) { expect_forecaster_matches_pytorch(ctx()); }

TEST_F(GpuTest, ForecasterWithEveryNormFoldedMatchesPyTorch) {
  const ScopedPolicy fold(ctx(), [](Policy& p) { p.fold_norms = true; });
  ASSERT_TRUE(Ops(ctx(), DType::F32).fold_norms_in_encoder());
  expect_forecaster_matches_pytorch(ctx());
}

// Warm-up at load time compiles what requests will use: afterwards greedy, beam and
// sampled translations create no new pipeline (none compiled, none read from the cache).
TEST(Warmup, FirstRequestsCompileNothing) {
  MessageLog log;
  ContextOptions o = test_options(log);  // a fresh, empty shader cache
  Context ctx(o);
  const std::string dir = std::string(VKF_SOURCE_DIR) + "/samples/dates";
  auto model = Model::load(ctx, dir);
  auto tok = CharTokenizer::from_file(dir + "/vocab.json");
  Session s(model);
  s.warmup();
  const CacheStats before = ctx.cache_stats();
  EXPECT_GT(before.spirv_misses, 0u);
  for (const char* text : {"the 3rd of March 1998", "3/3/98", "Tuesday, July 4, 2023"}) {
    s.generate({tok.encode(text)}, {.max_new_tokens = 16});
    s.generate({tok.encode(text)}, {.max_new_tokens = 16, .beam = 3});
    s.generate({tok.encode(text)}, {.max_new_tokens = 16, .temperature = 0.7f, .seed = 3});
  }
  const CacheStats after = ctx.cache_stats();
  EXPECT_EQ(after.spirv_hits + after.spirv_misses, before.spirv_hits + before.spirv_misses)
      << "a request after warmup() created new pipelines";
  EXPECT_EQ(ctx.validation_messages(), 0u) << log.joined();
}

// A memory limit stops an allocation past it with a message that names the buffer.
TEST(MemoryLimit, LoadingPastTheLimitIsAClearError) {
  MessageLog log;
  ContextOptions o = test_options(log);
  o.memory_limit = 1 << 20;  // the date translator's weights are 1.4 MB
  Context ctx(o);
  try {
    Model::load(ctx, std::string(VKF_SOURCE_DIR) + "/samples/dates");
    FAIL() << "the model loaded past the memory limit";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("limit of 1048576 bytes"), std::string::npos) << e.what();
  }
  EXPECT_LE(ctx.memory_stats().peak, uint64_t(1) << 20);
}

}  // namespace
}  // namespace vkf::test
