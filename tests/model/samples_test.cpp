// The shipped translator (samples/dates) through vkformer, against what PyTorch
// answered on the same 1,000 held-out inputs with the same weights (heldout_torch.txt,
// recorded by tools/train_dates.py): they must agree example by example.
#include <filesystem>
#include <fstream>

#include "support/gpu_test.hpp"
#include "vkformer/model.hpp"
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

}  // namespace
}  // namespace vkf::test
