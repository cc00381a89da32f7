// 256-wide Llama and GPT-2 models (tests/hf/wide, made by
// tools/hf_references/make_wide_references.py with transformers 4.36.2) with their linear
// weights and token embedding in each of llama.cpp's block types (LoadOptions::weights)
// and, decoder-only, its Q4_K_M and Q5_K_M mixes (LoadOptions::mix), against
// transformers running the same models with those weights quantized and dequantized by
// llama.cpp's reference quantizers (the `gguf` package's; llama.cpp's own for the
// K-quants, which gguf does not quantize): logits
// ||got - ref|| / ||ref|| over every position of a prompt and its continuation below
// 2e-4, and greedy decoding token for token. Blocks from the wrong place, nibbles in the
// wrong order or a scale from another block make errors of order 1 here.
//
// Tolerance: the weights are the same values on both sides (our blocks are byte-identical
// to gguf's and llama.cpp's on tests/ops/blocks_test.cpp's values; elsewhere a rare
// rounding tie may move one code by one step); what remains is fp32 accumulation, as
// llama_test.cpp's 1e-4, and those ties.
//
// The encoder-decoders (Marian, BART; 1 + 1 layers) are checked on teacher-forced targets
// logits the same way (their greedy decoding follows each family's generation settings,
// which the tiny references' generate() checks cover).
//
// Also printed, for docs/models.md: each type's logits error against transformers' fp32
// model (the quantization's own effect) and how many greedy tokens equal fp32's.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "hf_references.hpp"
#include "support/gpu_test.hpp"
#include "vkformer/blocks.hpp"
#include "vkformer/model.hpp"

namespace fs = std::filesystem;

namespace vkf::test {
namespace {

const fs::path kDir = fs::path(VKF_SOURCE_DIR) / "tests" / "hf" / "wide";

const nlohmann::json& references() {
  static const nlohmann::json refs = read_references(kDir / "references.json");
  return refs;
}

struct Case {
  const char* model;
  std::optional<BlockType> weights;
  std::optional<BlockMix> mix;
  const char* name() const { return weights ? block_type_name(*weights) : mix ? block_mix_name(*mix) : "fp32"; }
  bool quantized() const { return weights || mix; }
};

// How many tokens from the start two continuations share.
size_t leading_equal(const std::vector<uint32_t>& a, const std::vector<uint32_t>& b) {
  size_t same = 0;
  while (same < a.size() && same < b.size() && a[same] == b[same]) ++same;
  return same;
}

class WeightsInBlocks : public GpuTest, public ::testing::WithParamInterface<Case> {};

TEST_P(WeightsInBlocks, LogitsAndGreedyDecodingAgainstTransformers) {
  const Case c = GetParam();
  const char* name = c.model;
  auto model = Model::load(ctx(), (kDir / name).string(),
                           LoadOptions{.precision = DType::F32, .weights = c.weights, .mix = c.mix});
  // Every linear weight (and the tied embedding) is in blocks: these models are block-aligned.
  EXPECT_TRUE(model->checkpoint().weights_not_in_blocks.empty());
  if (c.quantized()) EXPECT_EQ(model->checkpoint().weight_bytes.count("fp32"), 0u);
  Session session(model);
  const nlohmann::json& refs = references()["models"][name];
  const uint32_t n = references()["new_tokens"];
  const std::vector<nlohmann::json> cases = c.quantized() ? std::vector<nlohmann::json>{refs["blocks"][c.name()]}
                                                          : refs["fp32"].get<std::vector<nlohmann::json>>();
  for (const auto& ref : cases) {
    const auto ids = ref["ids"].get<std::vector<uint32_t>>();
    SCOPED_TRACE("prompt of " + std::to_string(ids.size()) + " tokens");
    EXPECT_LT(relative_error(session.score(ref["scored"].get<std::vector<uint32_t>>()),
                             ref["logits"].get<std::vector<double>>()),
              2e-4);
    EXPECT_EQ(session.generate({ids}, {.max_new_tokens = n, .stop_at_eos = false}).at(0),
              ref["greedy"].get<std::vector<uint32_t>>());
    if (!c.quantized()) continue;
    // A batch of two decodes each as alone (a batch's step: one product of a row per
    // sequence; a mix's values, stored apart, in a product per sequence).
    const auto both = session.generate({ids, ids}, {.max_new_tokens = n, .stop_at_eos = false});
    EXPECT_EQ(both.at(0), ref["greedy"].get<std::vector<uint32_t>>());
    EXPECT_EQ(both.at(1), ref["greedy"].get<std::vector<uint32_t>>());
  }
  // A mix stores each tensor in llama-quantize's type: Llama's v (Q6_K in its "more bits"
  // layers) apart from q and k (the base type).
  if (c.mix && std::string(name) == "llama") {
    const auto& bytes = model->checkpoint().weight_bytes;
    EXPECT_TRUE(bytes.count("q6_k") && bytes.count(*c.mix == BlockMix::Q4_K_M ? "q4_k" : "q5_k"));
  }
  if (!c.quantized()) return;
  // The quantization's own effect, against transformers' fp32 model on the same prompt.
  const nlohmann::json& fp32 = refs["fp32"][0];
  const auto want = fp32["logits"].get<std::vector<double>>();
  const auto got = session.score(fp32["scored"].get<std::vector<uint32_t>>());
  double largest = 0;
  for (size_t i = 0; i < got.size(); ++i) largest = std::max(largest, std::abs(got[i] - want[i]));
  const auto greedy = session.generate({fp32["ids"].get<std::vector<uint32_t>>()}, {.max_new_tokens = n, .stop_at_eos = false}).at(0);
  const auto fp32_greedy = fp32["greedy"].get<std::vector<uint32_t>>();
  const size_t same = leading_equal(greedy, fp32_greedy);
  std::printf("[ figures  ] %s %s against fp32: logits relative error %.2e (largest %.3f), greedy equal for %zu of %zu\n",
              name, c.name(), relative_error(got, want), largest, same, fp32_greedy.size());
}

// Marian and BART: the logits of teacher-forced targets, as transformers gives them with
// the same weights (fp32, or quantized by gguf), and the quantization's own effect.
class Seq2SeqWeightsInBlocks : public GpuTest, public ::testing::WithParamInterface<Case> {};

TEST_P(Seq2SeqWeightsInBlocks, LogitsAgainstTransformers) {
  const char* name = GetParam().model;
  const std::optional<BlockType> weights = GetParam().weights;
  auto model = Model::load(ctx(), (kDir / name).string(), LoadOptions{.precision = DType::F32, .weights = weights});
  EXPECT_TRUE(model->checkpoint().weights_not_in_blocks.empty());
  if (weights) EXPECT_EQ(model->checkpoint().weight_bytes.count("fp32"), 0u);
  Session session(model);
  const nlohmann::json& refs = references()["models"][name];
  const auto sources = refs["sources"].get<std::vector<std::vector<uint32_t>>>();
  const auto targets = refs["targets"].get<std::vector<std::vector<uint32_t>>>();
  const nlohmann::json& want = weights ? refs["blocks"][block_type_name(*weights)] : refs["fp32"];
  for (size_t i = 0; i < sources.size(); ++i) {
    const auto got = session.score(sources[i], targets[i]);
    EXPECT_LT(relative_error(got, want[i].get<std::vector<double>>()), 2e-4) << name << " sequence " << i;
    if (weights)
      std::printf("[ figures  ] %s %s against fp32, sequence %zu: logits relative error %.2e\n", name,
                  block_type_name(*weights), i, relative_error(got, refs["fp32"][i].get<std::vector<double>>()));
  }
}

// Each model in fp32, in every block type and (decoder-only models) in llama.cpp's
// mixes, named "<model>_<storage>".
std::vector<Case> cases(std::initializer_list<const char*> models, bool mixes) {
  std::vector<Case> c;
  for (const char* m : models) {
    c.push_back({m, std::nullopt});
    for (BlockType t : kBlockTypes) c.push_back({m, t});
    if (mixes)
      for (BlockMix x : {BlockMix::Q4_K_M, BlockMix::Q5_K_M}) c.push_back({m, std::nullopt, x});
  }
  return c;
}

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  return std::string(info.param.model) + "_" + info.param.name();
}

INSTANTIATE_TEST_SUITE_P(Wide, WeightsInBlocks, ::testing::ValuesIn(cases({"llama", "gpt2"}, true)), case_name);
INSTANTIATE_TEST_SUITE_P(Wide, Seq2SeqWeightsInBlocks, ::testing::ValuesIn(cases({"marian", "bart"}, false)), case_name);

// fp16 activations over blocks (the tests above run fp32): the Llama in Q4_K_M (Q4_K and
// Q6_K weights) against transformers with the same quantized weights, greedy decoding
// token for token up to the first step whose top two logits in transformers are within
// 0.05 of each other (a near tie: fp16 storage moves these logits, which span ~10, by
// ~1e-2; the wide model's random weights make ties of 0.001 to 0.03 within 12 steps).
// Only the steps: a prompt's fp16 products of 20 rows over blocks compile for 80 s on
// lavapipe, and tests/ops checks them.
class Fp16WeightsInBlocks : public GpuTest {};

TEST_F(Fp16WeightsInBlocks, DecodeStepsAgainstTransformers) {
  const Case c{"llama", std::nullopt, BlockMix::Q4_K_M};
  auto model = Model::load(ctx(), (kDir / c.model).string(), LoadOptions{.precision = DType::F16, .mix = c.mix});
  Session session(model);
  const nlohmann::json& ref = references()["models"][c.model]["blocks"][c.name()];
  const auto want = ref["greedy"].get<std::vector<uint32_t>>();
  const auto got = session.generate({ref["ids"].get<std::vector<uint32_t>>()},
                                    {.max_new_tokens = uint32_t(want.size()), .stop_at_eos = false}).at(0);
  const size_t same = leading_equal(got, want);
  size_t apart = 0;  // steps before the first near tie
  const auto logits = ref["logits"].get<std::vector<double>>();
  const size_t prompt = ref["ids"].size(), vocab = logits.size() / ref["scored"].size();
  for (; apart < want.size(); ++apart) {  // row prompt - 1 + i of the logits predicts step i
    std::vector<double> row(logits.begin() + (prompt - 1 + apart) * vocab, logits.begin() + (prompt + apart) * vocab);
    std::partial_sort(row.begin(), row.begin() + 2, row.end(), std::greater<>());
    if (row[0] - row[1] < 0.05) break;
  }
  std::printf("[ figures  ] llama %s in fp16: greedy equal to transformers' for %zu of %zu (near tie at step %zu)\n",
              c.name(), same, want.size(), apart);
  EXPECT_GE(apart, 2u) << "the reference's first steps are far from ties";
  EXPECT_GE(same, apart);
}

// A mix is llama.cpp's rule for decoder-only models: an encoder-decoder's is refused by
// name, not guessed.
class MixOfBlocks : public GpuTest {};

TEST_F(MixOfBlocks, RefusedForEncoderDecoders) {
  try {
    Model::load(ctx(), (kDir / "marian").string(), LoadOptions{.mix = BlockMix::Q4_K_M});
    ADD_FAILURE() << "a mix applied to Marian";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("q4_k_m is llama.cpp's mix for decoder-only models"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace vkf::test
