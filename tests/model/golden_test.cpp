// torch-seq2seq models against PyTorch's own nn.Transformer: goldens made by
// tools/make_goldens.py (the CTest fixture "goldens" runs it into build/goldens).
//
// Logits tolerance, as a fraction of the logits' norm: fp32 1e-4 (each kernel is good
// to ~1e-6 relative; a dozen layers of them, and PyTorch's own fp32 rounding, stay
// well inside). fp16 stores every activation at 2^-11 ≈ 4.9e-4 relative, re-rounded at
// each of up to ~40 kernels a token passes: 1e-2. Token-for-token agreement is checked
// in fp32; in fp16 a near tie may legitimately flip, so it is not.
#include <filesystem>
#include <fstream>
#include <thread>
#include <nlohmann/json.hpp>

#include "support/gpu_test.hpp"
#include "vkformer/model.hpp"

namespace fs = std::filesystem;

namespace vkf::test {
namespace {

std::string golden_dir() {
  const char* d = std::getenv("VKF_GOLDEN_DIR");
  return d ? d : VKF_GOLDEN_DIR_DEFAULT;
}

std::vector<float> read_npy(const std::string& path, std::vector<size_t>& shape) {
  std::ifstream f(path, std::ios::binary);
  char magic[8];
  f.read(magic, 8);
  uint16_t len = 0;
  f.read(reinterpret_cast<char*>(&len), 2);
  std::string header(len, ' ');
  f.read(header.data(), len);
  EXPECT_NE(header.find("'<f4'"), std::string::npos) << header;
  auto open = header.find('('), close = header.find(')');
  std::string dims = header.substr(open + 1, close - open - 1);
  size_t n = 1;
  for (size_t pos = 0; pos < dims.size();) {
    size_t next = dims.find(',', pos);
    std::string item = dims.substr(pos, next == std::string::npos ? std::string::npos : next - pos);
    if (item.find_first_of("0123456789") != std::string::npos) {
      shape.push_back(std::stoul(item));
      n *= shape.back();
    }
    if (next == std::string::npos) break;
    pos = next + 1;
  }
  std::vector<float> v(n);
  f.read(reinterpret_cast<char*>(v.data()), std::streamsize(n * 4));
  return v;
}

double relative_error(const std::vector<float>& got, const std::vector<float>& want) {
  double num = 0, den = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    num += (double(got[i]) - want[i]) * (double(got[i]) - want[i]);
    den += double(want[i]) * want[i];
  }
  return std::sqrt(num / den);
}

// The cases tools/make_goldens.py wrote under `dir`: each directory with a golden.json,
// and that file parsed.
struct GoldenCase {
  fs::path dir;
  nlohmann::json g;
};
std::vector<GoldenCase> golden_cases(const std::string& dir) {
  std::vector<GoldenCase> cases;
  for (auto& entry : fs::directory_iterator(dir)) {
    if (!fs::exists(entry.path() / "golden.json")) continue;
    std::ifstream f(entry.path() / "golden.json");
    cases.push_back({entry.path(), nlohmann::json::parse(f)});
  }
  return cases;
}

class Golden : public GpuTest, public ::testing::WithParamInterface<DType> {};

TEST_P(Golden, MatchesPyTorchTransformer) {
  const std::string dir = golden_dir();
  if (dir.empty() || !fs::exists(dir)) GTEST_SKIP() << "no goldens (VKF_GOLDEN_DIR); python3-torch missing?";
  const bool f16 = GetParam() == DType::F16;
  const auto cases = golden_cases(dir);
  EXPECT_FALSE(cases.empty());
  for (const auto& [path, g] : cases) {
    SCOPED_TRACE(path.string());
    auto model = Model::load(ctx(), path.string(), GetParam());
    Session session(model);

    std::vector<size_t> shape;
    auto want = read_npy((path / "logits.npy").string(), shape);
    auto got = session.score(g["score"]["src"].get<std::vector<uint32_t>>(), g["score"]["tgt"].get<std::vector<uint32_t>>());
    ASSERT_EQ(got.size(), want.size());
    const double err = relative_error(got, want);
    EXPECT_LT(err, f16 ? 1e-2 : 1e-4) << "teacher-forced logits, relative to their norm";
    RecordProperty(path.filename().string() + (f16 ? "_fp16" : "_fp32"), std::to_string(err));
    if (f16) continue;

    GenerateOptions o{.max_new_tokens = g["max_new_tokens"]};
    auto sources = g["sources"].get<std::vector<std::vector<uint32_t>>>();
    auto single = g["greedy_single"].get<std::vector<std::vector<uint32_t>>>();
    for (size_t i = 0; i < sources.size(); ++i) EXPECT_EQ(session.generate({sources[i]}, o)[0], single[i]) << "greedy, source " << i;
    EXPECT_EQ(session.generate(sources, o), g["greedy"].get<std::vector<std::vector<uint32_t>>>()) << "padded batch";
    GenerateOptions beam = o;
    beam.beam = g["beam"]["width"];
    beam.length_penalty = g["beam"]["length_penalty"];
    EXPECT_EQ(session.generate({g["beam"]["source"].get<std::vector<uint32_t>>()}, beam)[0],
              g["beam"]["ids"].get<std::vector<uint32_t>>())
        << "beam search";
  }
}

// The same greedy tokens however many GPU-driven steps run per submit (sequences finish
// at different steps, so EOS handling on the GPU is exercised too): the host's recording
// and replay of steps, which the portable-profile rerun leaves out (its kernels run in
// the padded batches above, several steps a submit by default).
TEST_F(GpuTest, GoldenTokensHoweverManyStepsPerSubmit) {
  const std::string dir = golden_dir();
  if (dir.empty() || !fs::exists(dir)) GTEST_SKIP() << "no goldens (VKF_GOLDEN_DIR); python3-torch missing?";
  const auto cases = golden_cases(dir);
  EXPECT_FALSE(cases.empty());
  for (const auto& [path, g] : cases) {
    SCOPED_TRACE(path.string());
    auto model = Model::load(ctx(), path.string());
    Session session(model);
    const auto sources = g["sources"].get<std::vector<std::vector<uint32_t>>>();
    const auto want = g["greedy"].get<std::vector<std::vector<uint32_t>>>();
    for (uint32_t per_submit : {1u, 3u, 64u}) {
      GenerateOptions many{.max_new_tokens = g["max_new_tokens"]};
      many.submit_budget_ms = 0;  // no time budget: the step count alone decides
      many.max_steps_per_submit = per_submit;
      EXPECT_EQ(session.generate(sources, many), want) << "padded batch, up to " << per_submit << " steps per submit";
    }
  }
}

// Sampling: top-k 1 is greedy; the same seed gives the same tokens; every sampled token
// lies inside the top-k set of its step (checked through the teacher-forced logits).
TEST_F(GpuTest, SamplingRespectsSeedTopKAndTopP) {
  const std::string dir = golden_dir() + "/case_1";
  if (!fs::exists(dir + "/golden.json")) GTEST_SKIP() << "no goldens";
  std::ifstream f(dir + "/golden.json");
  auto g = nlohmann::json::parse(f);
  auto model = Model::load(ctx(), dir);
  Session s(model);
  auto src = g["sources"][2].get<std::vector<uint32_t>>();
  GenerateOptions greedy{.max_new_tokens = 8};
  GenerateOptions top1{.max_new_tokens = 8, .temperature = 1.0f, .top_k = 1, .seed = 5};
  EXPECT_EQ(s.generate({src}, top1), s.generate({src}, greedy));
  GenerateOptions hot{.max_new_tokens = 8, .temperature = 1.5f, .top_k = 5, .top_p = 0.9f, .seed = 42};
  auto a = s.generate({src}, hot)[0], b = s.generate({src}, hot)[0];
  EXPECT_EQ(a, b) << "same seed, same tokens";
  const uint32_t V = model->config().tgt_vocab_size;
  std::vector<uint32_t> tgt = {model->config().bos_id};
  for (uint32_t t : a) tgt.push_back(t);
  auto logits = s.score(src, tgt);
  for (size_t i = 0; i < a.size(); ++i) {
    const float* row = logits.data() + i * V;
    uint32_t above = 0;
    for (uint32_t v = 0; v < V; ++v) above += row[v] > row[a[i]];
    EXPECT_LT(above, 5u) << "token " << i << " is outside the top 5";
  }
  bool any_different = false;
  for (uint64_t seed = 1; seed < 6 && !any_different; ++seed) {
    hot.seed = seed;
    any_different = s.generate({src}, hot)[0] != a;
  }
  EXPECT_TRUE(any_different) << "sampling ignores the seed";
}

// Sampling runs on the GPU many steps per submit, like greedy decoding: the same tokens
// with 1, 3 or 64 steps per submit and when profiled (one host-driven step per submit),
// for a batch of sources that stop at their own EOS; and at batch 1 over 64 tokens at
// most 0.2 submits and 0.05 recordings per token.
TEST_F(GpuTest, SamplingRunsManyStepsPerSubmit) {
  const std::string dir = golden_dir() + "/case_2";
  if (!fs::exists(dir + "/golden.json")) GTEST_SKIP() << "no goldens";
  auto model = Model::load(ctx(), dir);
  Session s(model);
  const std::vector<std::vector<uint32_t>> src = {{3, 4, 5}, {6}, {7, 8}};
  GenerateOptions o{.max_new_tokens = 20, .temperature = 1.3f, .top_k = 3, .top_p = 0.95f, .seed = 11,
                    .submit_budget_ms = 0, .max_steps_per_submit = 1};
  const auto want = s.generate(src, o);
  for (uint32_t per_submit : {3u, 64u}) {
    o.max_steps_per_submit = per_submit;
    EXPECT_EQ(s.generate(src, o), want) << per_submit << " steps per submit";
  }
  s.set_profile(true);
  EXPECT_EQ(s.generate(src, o), want) << "profiled";
  s.set_profile(false);
  const auto one = s.generate({{3, 4, 5}}, {.max_new_tokens = 64, .temperature = 1.0f, .seed = 2, .stop_at_eos = false,
                                            .submit_budget_ms = 0});
  ASSERT_EQ(one[0].size(), 64u);
  const GenerateStats& st = s.last_stats();
  EXPECT_LE(st.submits_per_token(), 0.2) << st.submits << " submits";
  EXPECT_LE(st.recordings_per_token(), 0.05) << st.recordings << " recordings";
}

// A decode step is recorded once per generate call and re-submitted for every token:
// recordings do not grow with the number of tokens, submits do.
TEST_F(GpuTest, DecodeStepIsRecordedOnceAndReplayed) {
  const std::string dir = golden_dir() + "/case_2";
  if (!fs::exists(dir + "/golden.json")) GTEST_SKIP() << "no goldens";
  auto model = Model::load(ctx(), dir);
  Session s(model);
  auto count = [&](uint32_t tokens) {
    const auto before = ctx().counters();
    // No time budget: the encoder in one submit (EncoderSubmitsFitTheTimeBudget tests the pieces).
    auto out = s.generate({{3, 4, 5}, {6}},
                          {.max_new_tokens = tokens, .stop_at_eos = false, .submit_budget_ms = 0, .max_steps_per_submit = 1});
    EXPECT_EQ(out[0].size(), tokens);
    const auto after = ctx().counters();
    return std::make_pair(after.recordings - before.recordings, after.submits - before.submits);
  };
  count(2);  // first: one-time setup (a discrete GPU zeroes the attention scratch with a copy submit)
  auto [rec2, sub2] = count(2);
  auto [rec12, sub12] = count(12);
  EXPECT_EQ(rec2, rec12) << "recordings grew with the number of tokens";
  EXPECT_EQ(sub12 - sub2, 10u) << "one submit per extra token";
}

// What decoding costs the host, as `vkformer generate --json` reports it: at batch 1
// over 64 tokens with no time budget, greedy steps run many per submit from one
// recording. Dispatches per decoder layer where decode steps fold each LayerNorm into
// the GEMM that reads it (GPUs, and the portable profile, checked here too): 8 with each
// attention's output projection a GEMM of its own (the default), 6 with it fused
// (VKF_DECODE_PROJECTION=attention); 11 where they do not fold (CPU drivers: slower there).
void expect_decode_counters(Context& ctx, const std::string& dir) {
  auto model = Model::load(ctx, dir);
  Session s(model);
  const auto out = s.generate({{3, 4, 5}}, {.max_new_tokens = 64, .stop_at_eos = false, .submit_budget_ms = 0});
  ASSERT_EQ(out[0].size(), 64u);
  const GenerateStats& st = s.last_stats();
  EXPECT_EQ(st.tokens, 64u);
  EXPECT_LE(st.recordings_per_token(), 0.05) << st.recordings << " recordings";
  EXPECT_LE(st.submits_per_token(), 0.2) << st.submits << " submits";
  const bool folded = Ops(ctx, DType::F32).fold_norms_in_decode_steps();
  EXPECT_GT(st.dispatches_per_decoder_layer, 0);
  const bool fused = Ops(ctx, DType::F32).project_in_decode_attention();
  EXPECT_LE(st.dispatches_per_decoder_layer, !folded ? 11 : fused ? 6 : 8);
  // The encoder: 5 dispatches per layer with each LayerNorm folded in, 7 without.
  EXPECT_EQ(st.dispatches_per_encoder_layer, Ops(ctx, DType::F32).fold_norms_in_encoder() ? 5.0 : 7.0);
  EXPECT_GT(st.encode_ms, 0);
  EXPECT_GT(st.decode_tokens_per_second(), 0);
  // With the default 2 ms budget a slow device keeps one step per submit; a fast one
  // packs more. Either way the tokens are the same.
  EXPECT_EQ(s.generate({{3, 4, 5}}, {.max_new_tokens = 64, .stop_at_eos = false}), out);
}

TEST_F(GpuTest, CountersPerTokenAtBatchOne) {
  const std::string dir = golden_dir() + "/case_2";
  if (!fs::exists(dir + "/golden.json")) GTEST_SKIP() << "no goldens";
  expect_decode_counters(ctx(), dir);
}

TEST(DecodeCounters, PortableProfileFoldsNorms) {
  const std::string dir = golden_dir() + "/case_2";
  if (!fs::exists(dir + "/golden.json")) GTEST_SKIP() << "no goldens";
  MessageLog log;
  ContextOptions o = test_options(log);
  o.profile = "portable";
  Context ctx(o);
  ASSERT_TRUE(Ops(ctx, DType::F32).fold_norms_in_decode_steps());
  expect_decode_counters(ctx, dir);
  EXPECT_TRUE(log.messages.empty()) << log.messages.front();
}

// The GPU-time budget bounds the encoder's submits too: once an encode has been timed,
// a budget smaller than one layer puts each encoder layer (and the final norm with the
// cross K/V) in a submit of its own, with the same answers.
// (A GPU's rule: CPU drivers keep one submit, so this runs under the portable profile.)
TEST(EncoderSubmits, FitTheTimeBudget) {
  const std::string dir = golden_dir() + "/case_2";
  if (!fs::exists(dir + "/golden.json")) GTEST_SKIP() << "no goldens";
  MessageLog log;
  ContextOptions options = test_options(log);
  options.profile = "portable";
  Context ctx(options);
  auto model = Model::load(ctx, dir);
  const uint32_t layers = model->config().num_encoder_layers;
  ASSERT_GE(layers, 2u) << "case_2 should have several encoder layers";
  Session s(model);
  const std::vector<std::vector<uint32_t>> src = {{3, 4, 5, 6, 7}};
  GenerateOptions whole{.max_new_tokens = 4, .stop_at_eos = false, .submit_budget_ms = 0, .max_steps_per_submit = 1};
  s.generate(src, whole);  // first: one-time setup (a discrete GPU zeroes the attention scratch with a copy submit)
  const auto want = s.generate(src, whole);
  const uint64_t whole_submits = s.last_stats().submits;
  GenerateOptions tiny = whole;
  tiny.submit_budget_ms = 1e-6f;  // less than any layer takes
  EXPECT_EQ(s.generate(src, tiny), want);  // the first encode timed it
  EXPECT_EQ(s.last_stats().submits, whole_submits + layers) << "one submit per encoder layer, and one for the rest";
  EXPECT_EQ(s.generate(src, whole), want);
  EXPECT_EQ(s.last_stats().submits, whole_submits) << "no budget: the encoder in one submit";
  EXPECT_TRUE(log.messages.empty()) << log.messages.front();
}

// Load once, generate from several threads at once, a session each: same answers as alone.
TEST_F(GpuTest, SessionsOnSeveralThreadsShareOneModel) {
  const std::string dir = golden_dir() + "/case_3";
  if (!fs::exists(dir + "/golden.json")) GTEST_SKIP() << "no goldens";
  std::ifstream f(dir + "/golden.json");
  auto g = nlohmann::json::parse(f);
  auto model = Model::load(ctx(), dir);
  auto sources = g["sources"].get<std::vector<std::vector<uint32_t>>>();
  auto want = g["greedy_single"].get<std::vector<std::vector<uint32_t>>>();
  GenerateOptions o{.max_new_tokens = g["max_new_tokens"]};
  std::vector<std::vector<std::vector<uint32_t>>> got(4);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      Session s(model);
      for (int round = 0; round < 2; ++round)
        for (auto& src : sources) got[t].push_back(s.generate({src}, o)[0]);
    });
  for (auto& t : threads) t.join();
  for (int t = 0; t < 4; ++t)
    for (size_t i = 0; i < got[t].size(); ++i) EXPECT_EQ(got[t][i], want[i % sources.size()]) << "thread " << t;
}

INSTANTIATE_TEST_SUITE_P(, Golden, ::testing::Values(DType::F32, DType::F16),
                         [](const auto& info) { return std::string(to_string(info.param)); });

}  // namespace
}  // namespace vkf::test
