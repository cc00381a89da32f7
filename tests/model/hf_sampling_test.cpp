// Sampling with transformers' processors and warpers (temperature 0.8, top_k 20, top_p
// 0.9) for Hugging Face encoder-decoders (Marian, BART, their generation_config.json's
// processors) and a decoder-only model with a processor (no_repeat_ngram_size 1 over its
// prompt): the first free token of 3,000 outputs (one batch, each output its own draws)
// against the distribution transformers 4.36.2's generate() draws from
// (tools/hf_references/make_sampling_references.py), and a decoder-only model without
// processors, which samples on the GPU (ops/sample.comp): no token it excludes, and Pearson's
// chi-square within its 0.999 quantile (bins of fewer than 5 expected draws pooled). The
// seed is fixed, so the test is deterministic; the quantile says how unlucky a correct
// sampler would have to be to fail it. A seed gives the same tokens twice; another seed
// other tokens.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "hf_references.hpp"
#include "support/gpu_test.hpp"
#include "vkformer/model.hpp"

namespace fs = std::filesystem;

namespace vkf::test {
namespace {

const fs::path kHf = fs::path(VKF_SOURCE_DIR) / "tests" / "hf";

// The chi-square distribution's quantile at 0.999 (Wilson-Hilferty: within 1% here).
double chi_square_999(double dof) {
  const double z = 3.0902, a = 2.0 / (9.0 * dof);
  return dof * std::pow(1 - a + z * std::sqrt(a), 3);
}

class HfSampling : public GpuTest, public ::testing::WithParamInterface<const char*> {};

TEST_P(HfSampling, FirstFreeTokenFollowsTransformersDistribution) {
  const nlohmann::json refs = read_references(kHf / "sampling_references.json");
  const std::string name = GetParam();
  const nlohmann::json& m = refs["models"][name];
  auto model = Model::load(ctx(), (kHf / name.substr(0, name.find(':'))).string(), DType::F32);
  Session session(model);
  GenerateOptions o = GenerateOptions::defaults(model->config());
  o.beam = 1;
  o.temperature = refs["warpers"]["temperature"];
  o.top_k = refs["warpers"]["top_k"];
  o.top_p = refs["warpers"]["top_p"];
  o.no_repeat_ngram_size = m["extra"].value("no_repeat_ngram_size", o.no_repeat_ngram_size);
  const uint32_t step = m["step"];
  o.max_new_tokens = 4;  // as the reference ran: forced EOS at the length limit stays out of the way
  o.stop_at_eos = false;
  o.seed = 52;
  const size_t N = 3000;
  const std::vector<std::vector<uint32_t>> inputs(N, m["ids"].get<std::vector<uint32_t>>());
  const auto out = session.generate(inputs, o);
  const std::vector<double> p = m["probs"];
  std::vector<double> count(p.size(), 0);
  const auto forced = m["forced"].get<std::vector<uint32_t>>();
  for (const auto& seq : out) {
    ASSERT_GT(seq.size(), step);
    ASSERT_EQ(std::vector<uint32_t>(seq.begin(), seq.begin() + step), forced);
    ASSERT_GT(p.at(seq[step]), 0.0) << "drew token " << seq[step] << ", which transformers never draws there";
    count[seq[step]] += 1;
  }
  double chi2 = 0, pooled_expected = 0, pooled_count = 0;
  size_t bins = 0;
  for (size_t t = 0; t < p.size(); ++t) {
    if (p[t] == 0) continue;
    const double e = p[t] * N;
    if (e < 5) {
      pooled_expected += e, pooled_count += count[t];
      continue;
    }
    chi2 += (count[t] - e) * (count[t] - e) / e;
    ++bins;
  }
  if (pooled_expected > 0) chi2 += (pooled_count - pooled_expected) * (pooled_count - pooled_expected) / pooled_expected, ++bins;
  ASSERT_GE(bins, 3u);
  EXPECT_LT(chi2, chi_square_999(double(bins - 1))) << bins << " bins";
  // Keyed by the seed: the same draws again; another seed, others.
  const std::vector<std::vector<uint32_t>> few(inputs.begin(), inputs.begin() + 40);
  const auto first = session.generate(few, o);
  EXPECT_EQ(first, std::vector<std::vector<uint32_t>>(out.begin(), out.begin() + 40));
  o.seed = 53;
  EXPECT_NE(session.generate(few, o), first);
}

INSTANTIATE_TEST_SUITE_P(, HfSampling, ::testing::Values("marian", "bart", "llama/gqa", "llama/gqa:gpu"), [](const auto& info) {
  std::string n = info.param;
  std::replace(n.begin(), n.end(), '/', '_');
  std::replace(n.begin(), n.end(), ':', '_');
  return n;
});

}  // namespace
}  // namespace vkf::test
