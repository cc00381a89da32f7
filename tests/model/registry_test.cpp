// The family registry: every directory's kind, tokenizer files and the list of families
// come from one table (lib/model/families/registry.cpp), and what asks by family name
// (Model::load, Tokenizer::for_model, the CLI, the C API) gets the same answer.
#include <filesystem>
#include <fstream>

#include "support/gpu_test.hpp"

namespace vkf::test {
namespace {

const std::string kSource = VKF_SOURCE_DIR;

TEST(Registry, EachDirectoryHasItsKind) {
  for (const char* dir : {"/samples/dates", "/tests/hf/marian", "/tests/hf/bart", "/tests/hf/gpt2/lm",
                          "/tests/hf/llama/gqa", "/tests/hf/llama/mistral", "/tests/hf/llama/qwen2"})
    EXPECT_EQ(model_task(kSource + dir), ModelTask::Generator) << dir;
  EXPECT_EQ(model_task(kSource + "/samples/forecast"), ModelTask::Forecaster);
  for (const char* dir : {"/tests/hf/bert/base", "/tests/hf/roberta/base", "/tests/hf/distilbert/mlm"})
    EXPECT_EQ(model_task(kSource + dir), ModelTask::Encoder) << dir;
  // XLM-R (whose Unigram tokenizer comes with T5) is refused by name, not read as RoBERTa.
  const std::string xlmr = scratch_dir("registry-xlmr");
  std::ofstream(xlmr + "/config.json") << R"({"model_type": "xlm-roberta"})";
  try {
    Tokenizer::for_model(xlmr);
    ADD_FAILURE() << "xlm-roberta accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("model_type 'xlm-roberta' is not supported"), std::string::npos) << e.what();
  }
  const std::string unknown = scratch_dir("registry-unknown");
  std::ofstream(unknown + "/config.json") << R"({"model_type": "t5"})";
  EXPECT_EQ(model_task(unknown), ModelTask::Unknown);
  EXPECT_THROW(model_task(kSource + "/no/such/directory"), Error);  // what is wrong with the directory, first
}

TEST(Registry, ListsEveryFamilyOnce) {
  EXPECT_EQ(supported_model_families(),
            "torch-seq2seq and torch-patch-forecaster, and Hugging Face model_type marian, bart, gpt2, llama, mistral, "
            "qwen2, bert, roberta and distilbert");
  const std::string unknown = scratch_dir("registry-listed");
  std::ofstream(unknown + "/config.json") << R"({"architecture": "torch-gru"})";
  MessageLog log;
  Context ctx(test_options(log));
  try {
    Model::load(ctx, unknown);
    ADD_FAILURE() << "an unknown architecture loaded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("unknown architecture 'torch-gru' (this vkformer knows: " +
                                         supported_model_families() + ")"),
              std::string::npos)
        << e.what();
  }
}

TEST(Registry, TokenizerFilesByFamily) {
  EXPECT_EQ(Tokenizer::files_for_model(kSource + "/samples/dates"), std::vector<std::string>{"vocab.json"});
  EXPECT_EQ(Tokenizer::files_for_model(kSource + "/tests/hf/llama/gqa"),
            (std::vector<std::string>{"tokenizer.model", "tokenizer.json"}));
  EXPECT_TRUE(Tokenizer::files_for_model(kSource + "/samples/forecast").empty());
  EXPECT_EQ(Tokenizer::files_for_model(kSource + "/tests/hf/bert/base"), (std::vector<std::string>{"tokenizer.json", "vocab.txt"}));
  EXPECT_EQ(Tokenizer::files_for_model(kSource + "/tests/hf/roberta/base"),
            (std::vector<std::string>{"tokenizer.json", "vocab.json"}));
  try {
    Tokenizer::for_model(kSource + "/samples/forecast");
    ADD_FAILURE() << "a forecaster made a tokenizer";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("takes no text"), std::string::npos) << e.what();
  }
  try {
    Tokenizer::for_model(kSource + "/tests/hf/llama/gqa");  // a Llama without tokenizer files
    ADD_FAILURE() << "a tokenizer from no files";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::NotFound) << e.what();
  }
}

TEST(Registry, ModelLoadSendsAForecasterToItsClass) {
  MessageLog log;
  Context ctx(test_options(log));
  try {
    Model::load(ctx, kSource + "/samples/forecast");
    ADD_FAILURE() << "Model::load took a forecaster";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("is a patch forecaster: Forecaster::load"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace vkf::test
