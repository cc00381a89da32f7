// Models from GGUF files made by llama.cpp's own converter and quantizer (tests/gguf/<model>,
// tools/gguf_references/make_gguf_references.py): random Llama (GQA untied, tied), Qwen2
// and GPT-2 checkpoints at F32, F16, Q8_0, Q4_0 and Q4_K_M, and a Llama with Llama 3.1's
// rope scaling (rope_freqs.weight; transformers 4.43) at F32, F16 and Q4_0, loaded through the same family
// code as their Hugging Face directories (ModelFiles reads the file's metadata as
// config.json and its tensors under transformers' names, Q and K rows put back in
// transformers' order for `llama`; weights in blocks uploaded as the file holds them).
// Against transformers on the same weights (the checkpoint for F32; each file's weights
// dequantized by the gguf package for the others), fp32: logits ||got - ref|| / ||ref||
// over a prompt of 7 and its continuation below 1e-4 (fp32 accumulation, as
// llama_test.cpp), and greedy decoding token for token. Q and K rows left in llama.cpp's
// order, or a block type read as another, make errors of order 1.
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "hf_references.hpp"
#include "support/gpu_test.hpp"
#include "vkformer/error.hpp"
#include "vkformer/model.hpp"
#include "vkformer/tokenizer.hpp"

namespace fs = std::filesystem;

namespace vkf::test {
namespace {

const fs::path kDir = fs::path(VKF_SOURCE_DIR) / "tests" / "gguf";

const nlohmann::json& references() {
  static const nlohmann::json refs = read_references(kDir / "references.json");
  return refs;
}

struct Case {
  const char* model;
  const char* type;
};

class GgufModels : public GpuTest, public ::testing::WithParamInterface<Case> {};

TEST_P(GgufModels, LogitsAndGreedyDecodingAgainstTransformers) {
  const Case c = GetParam();
  const fs::path file = kDir / c.model / (std::string(c.model) + "." + c.type + ".gguf");
  const nlohmann::json& model_refs = references()["models"][c.model];
  const nlohmann::json& ref = model_refs["files"][c.type];
  auto model = Model::load(ctx(), file.string(), LoadOptions{.precision = DType::F32});
  // The file's blocks stay as they are: no weight left in fp32 but 1-D tensors and F32/F16 files'.
  const auto& bytes = model->checkpoint().weight_bytes;
  if (std::string(c.type) == "Q4_K_M") EXPECT_TRUE(bytes.count("q4_k") && bytes.count("q6_k"));
  if (std::string(c.type) == "Q8_0") EXPECT_TRUE(bytes.count("q8_0") && !bytes.count("fp32"));
  Session session(model);
  const auto ids = model_refs["ids"].get<std::vector<uint32_t>>();
  EXPECT_LT(relative_error(session.score(ref["scored"].get<std::vector<uint32_t>>()), ref["logits"].get<std::vector<double>>()),
            1e-4);
  EXPECT_EQ(session.generate({ids}, {.max_new_tokens = 8, .stop_at_eos = false}).at(0),
            ref["greedy"].get<std::vector<uint32_t>>());
  if (std::string(c.type) == "F32") {  // the file against the checkpoint it was converted from
    const nlohmann::json& hf = model_refs["transformers"];
    EXPECT_LT(relative_error(session.score(hf["scored"].get<std::vector<uint32_t>>()), hf["logits"].get<std::vector<double>>()),
              1e-4);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Files, GgufModels,
    ::testing::Values(Case{"llama_gqa", "F32"}, Case{"llama_gqa", "F16"}, Case{"llama_gqa", "Q8_0"},
                      Case{"llama_gqa", "Q4_0"}, Case{"llama_gqa", "Q4_K_M"}, Case{"llama_tied", "F32"},
                      Case{"llama_tied", "F16"}, Case{"llama_tied", "Q8_0"}, Case{"llama_tied", "Q4_0"},
                      Case{"llama_tied", "Q4_K_M"}, Case{"qwen2", "F32"}, Case{"qwen2", "F16"}, Case{"qwen2", "Q8_0"},
                      Case{"qwen2", "Q4_0"}, Case{"qwen2", "Q4_K_M"}, Case{"gpt2", "F32"}, Case{"gpt2", "F16"},
                      Case{"gpt2", "Q8_0"}, Case{"gpt2", "Q4_0"}, Case{"gpt2", "Q4_K_M"}, Case{"llama31", "F32"},
                      Case{"llama31", "F16"}, Case{"llama31", "Q4_0"}, Case{"mistral_head_dim", "F32"},
                      Case{"mistral_head_dim", "F16"}, Case{"mistral_head_dim", "Q8_0"},
                      Case{"mistral_head_dim", "Q4_0"}),
    [](const auto& info) { return std::string(info.param.model) + "_" + info.param.type; });

// The SentencePiece tokenizer a `llama`-kind GGUF file carries (tokens, scores, token
// types, add_space_prefix; built into SentencePiece's model proto) encodes and decodes
// the shared sentence list as transformers' LlamaTokenizer does with the checkpoint's
// tokenizer.model, from every file (F32 and quantized alike carry it).
TEST(GgufTokenizers, SentencePieceAsTransformersReadsTheCheckpoints) {
  for (const char* name : {"llama_gqa", "llama_tied", "qwen2"})
    for (const char* type : {"F32", "Q4_K_M"}) {
      SCOPED_TRACE(std::string(name) + " " + type);
      const auto tokenizer = Tokenizer::for_model((kDir / name / (std::string(name) + "." + type + ".gguf")).string());
      EXPECT_NE(tokenizer->describe().find("sentencepiece"), std::string::npos) << tokenizer->describe();
      size_t checked = 0;
      for (const auto& ref : references()["models"][name]["tokenizer"]) {
        const std::string text = ref["text"];
        EXPECT_EQ(tokenizer->encode(text), ref["ids"].get<std::vector<uint32_t>>()) << text;
        EXPECT_EQ(tokenizer->decode(ref["ids"].get<std::vector<uint32_t>>()), ref["decoded"].get<std::string>()) << text;
        ++checked;
      }
      EXPECT_GE(checked, 19u);
    }
}

// Byte-level BPE tokenizers a `gpt2`-kind GGUF file carries (tokens, merges, token
// types, the split pattern named by tokenizer.ggml.pre), written from the small trained
// tokenizers of tests/hf/llama (tools/gguf_references/make_gguf_tokenizer_references.py):
// ids and text as transformers' fast tokenizer gives them on the sentence list; a
// pre-tokenizer name vkformer does not read is refused by name.
TEST(GgufTokenizers, ByteLevelBpeForEachPreTokenizerAsTransformers) {
  static const nlohmann::json refs = read_references(kDir / "tokenizers" / "references.json");
  for (const char* pre : {"llama-bpe", "qwen2", "gpt-2", "smollm"}) {
    SCOPED_TRACE(pre);
    const auto tokenizer = Tokenizer::for_model((kDir / "tokenizers" / (std::string(pre) + ".gguf")).string());
    size_t checked = 0;
    for (const auto& ref : refs[pre]) {
      const std::string text = ref["text"];
      EXPECT_EQ(tokenizer->encode(text), ref["ids"].get<std::vector<uint32_t>>()) << text;
      EXPECT_EQ(tokenizer->decode(ref["ids"].get<std::vector<uint32_t>>()), ref["decoded"].get<std::string>()) << text;
      ++checked;
    }
    EXPECT_GE(checked, 21u);
  }
  // A GPT-2 file made by llama.cpp's converter: its tokenizer as transformers' fast one.
  const auto gpt2 = Tokenizer::for_model((kDir / "gpt2" / "gpt2.Q8_0.gguf").string());
  for (const auto& ref : references()["models"]["gpt2"]["tokenizer"]) {
    EXPECT_EQ(gpt2->encode(ref["text"].get<std::string>()), ref["ids"].get<std::vector<uint32_t>>()) << ref["text"];
    EXPECT_EQ(gpt2->decode(ref["ids"].get<std::vector<uint32_t>>()), ref["decoded"].get<std::string>()) << ref["text"];
  }
  // The same file with another pre-tokenizer name: refused, naming it.
  std::ifstream in(kDir / "tokenizers" / "gpt-2.gguf", std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), {});
  const size_t at = bytes.find("gpt-2");
  ASSERT_NE(at, std::string::npos);
  bytes.replace(at, 5, "gpt-9");
  try {
    (void)Tokenizer::for_model(ModelFiles::in_memory({{"t.gguf", bytes}}));
    ADD_FAILURE() << "an unknown pre-tokenizer accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("tokenizer.ggml.pre 'gpt-9'"), std::string::npos) << e.what();
  }
}

// More tokens that end an output (ModelConfig::more_eos_ids): Llama 3's list of
// eos_token_id in config.json, and a GGUF file's end-of-turn id, which its metadata as
// config.json lists after its EOS.
TEST_F(GpuTest, AModelsOtherEndTokensEndAnOutput) {
  const fs::path dir = scratch_dir("more_eos");
  fs::copy(fs::path(VKF_SOURCE_DIR) / "tests" / "hf" / "llama" / "tied", dir,
           fs::copy_options::recursive | fs::copy_options::overwrite_existing);
  fs::remove(dir / "generation_config.json");
  const std::vector<uint32_t> prompt = {5, 17, 9};
  std::vector<uint32_t> free_run;
  {
    Session s(Model::load(ctx(), dir.string()));
    free_run = s.generate({prompt}, {.max_new_tokens = 6, .stop_at_eos = false}).at(0);
  }
  ASSERT_EQ(free_run.size(), 6u);
  nlohmann::json config = nlohmann::json::parse(std::ifstream(dir / "config.json"));
  config["eos_token_id"] = {config["eos_token_id"], free_run[2]};
  std::ofstream(dir / "config.json") << config.dump();
  auto model = Model::load(ctx(), dir.string());
  EXPECT_EQ(model->config().more_eos_ids, std::vector<uint32_t>{free_run[2]});
  Session s(model);
  EXPECT_EQ(s.generate({prompt}, {.max_new_tokens = 6}).at(0), std::vector<uint32_t>(free_run.begin(), free_run.begin() + 3));
  EXPECT_EQ(s.generate({prompt}, {.max_new_tokens = 6, .stop_at_eos = false}).at(0), free_run);
  config["eos_token_id"] = {2, 1u << 30};
  std::ofstream(dir / "config.json") << config.dump();
  EXPECT_THROW(Model::load(ctx(), dir.string()), Error);
}

// The same file from memory (vkf_model_load_from_memory's path): the same logits.
TEST_F(GpuTest, GgufModelFromMemoryAsFromAPath) {
  const fs::path file = kDir / "llama_gqa" / "llama_gqa.Q4_K_M.gguf";
  std::ifstream in(file, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), {});
  const nlohmann::json& ref = references()["models"]["llama_gqa"]["files"]["Q4_K_M"];
  auto model = Model::load(ctx(), ModelFiles::in_memory({{"model.gguf", bytes}}), LoadOptions{});
  Session session(model);
  EXPECT_LT(relative_error(session.score(ref["scored"].get<std::vector<uint32_t>>()), ref["logits"].get<std::vector<double>>()),
            1e-4);
}

}  // namespace
}  // namespace vkf::test
