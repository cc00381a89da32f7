// Embedder against sentence-transformers 2.7.0 (tools/hf_references/
// make_sentence_references.py): a random MiniLM-shaped sentence-transformers directory
// (tests/hf/bert/sentence/: Transformer, mean Pooling, Normalize without its folder,
// max_seq_length 24) and the same weights under cls, max, mean_sqrt_len_tokens and all
// four pooling modes concatenated (the pooling config changed in memory). Each text's
// embedding within 1e-4 relative of sentence-transformers' in fp32 (cosine >= 0.99999),
// 1e-2 in fp16 (activations stored in fp16 through two post-norm layers); the texts it
// cut at 24 tokens the same. Bad directories and modes are named errors.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "hf_references.hpp"
#include "support/gpu_test.hpp"
#include "vkformer/embedder.hpp"
#include "vkformer/model.hpp"

namespace fs = std::filesystem;

namespace vkf::test {
namespace {

const fs::path kDir = fs::path(VKF_SOURCE_DIR) / "tests" / "hf" / "bert" / "sentence";

std::string slurp(const fs::path& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// The directory's files in memory, with `pooling` as 1_Pooling/config.json and
// modules.json (Normalize dropped where `normalize` is false) and any file replaced.
struct MemoryModel {
  std::map<std::string, std::string> files;
  explicit MemoryModel(const nlohmann::json& pooling_modes, bool normalize) {
    for (const char* name : {"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json", "vocab.txt",
                             "sentence_bert_config.json", "modules.json"})
      files[name] = slurp(kDir / name);
    nlohmann::json pooling = nlohmann::json::parse(slurp(kDir / "1_Pooling" / "config.json"));
    for (const char* key : {"pooling_mode_cls_token", "pooling_mode_max_tokens", "pooling_mode_mean_tokens",
                            "pooling_mode_mean_sqrt_len_tokens"})
      pooling[key] = false;
    for (const auto& mode : pooling_modes)
      pooling[mode == "cls" ? "pooling_mode_cls_token" : mode == "max" ? "pooling_mode_max_tokens"
              : mode == "mean" ? "pooling_mode_mean_tokens" : "pooling_mode_mean_sqrt_len_tokens"] = true;
    files["1_Pooling_config.json"] = pooling.dump();
    nlohmann::json modules = nlohmann::json::parse(files["modules.json"]);
    if (!normalize) modules.erase(2);
    files["modules.json"] = modules.dump();
  }
  ModelFiles model_files() const {
    std::vector<ModelFiles::File> list;
    for (const auto& [name, bytes] : files) list.push_back({name, bytes});
    return ModelFiles::in_memory(list);
  }
};

double cosine(const float* a, const std::vector<double>& b) {
  double ab = 0, aa = 0, bb = 0;
  for (size_t i = 0; i < b.size(); ++i) ab += a[i] * b[i], aa += double(a[i]) * a[i], bb += b[i] * b[i];
  return ab / std::sqrt(aa * bb);
}

class Embed : public GpuTest, public ::testing::WithParamInterface<DType> {};

TEST_P(Embed, EmbeddingsAsSentenceTransformers) {
  const DType dtype = GetParam();
  const nlohmann::json refs = read_references(kDir / "references.json");
  const std::vector<std::string> texts = refs["texts"];
  auto model = Model::load(ctx(), kDir.string(), dtype);
  const double tolerance = dtype == DType::F16 ? 1e-2 : 1e-4, least_cosine = dtype == DType::F16 ? 0.999 : 0.99999;
  for (const auto& [name, v] : refs["variants"].items()) {
    SCOPED_TRACE(name);
    const MemoryModel memory(v["pooling"], v["normalize"]);
    Embedder embedder(model, name == "directory" ? ModelFiles(kDir.string()) : memory.model_files());
    const EmbedderConfig& c = embedder.config();
    EXPECT_TRUE(c.sentence_transformers);
    EXPECT_EQ(c.max_tokens, 24u);
    EXPECT_EQ(c.normalize, v["normalize"].get<bool>());
    EXPECT_EQ(c.width, 32u * v["pooling"].size());
    for (uint32_t batch : {32u, 4u, 1u}) {
      SCOPED_TRACE("batch " + std::to_string(batch));
      embedder.batch_size = batch;
      size_t calls = 0, last = 0;
      const Embeddings e = embedder.embed(texts, [&](size_t done, size_t total) {
        EXPECT_GT(done, last);
        EXPECT_EQ(total, texts.size());
        last = done, ++calls;
      });
      EXPECT_EQ(calls, (texts.size() + batch - 1) / batch);
      EXPECT_EQ(last, texts.size());
      ASSERT_EQ(e.count, texts.size());
      ASSERT_EQ(e.width, c.width);
      EXPECT_EQ(e.truncated, refs["truncated"].get<std::vector<size_t>>());
      for (size_t i = 0; i < texts.size(); ++i) {
        SCOPED_TRACE("text " + std::to_string(i));
        const std::vector<double> want = v["embeddings"][i];
        const std::vector<float> got(e.values.begin() + i * e.width, e.values.begin() + (i + 1) * e.width);
        EXPECT_LT(relative_error(got, want), tolerance);
        EXPECT_GE(cosine(got.data(), want), least_cosine);
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(, Embed, ::testing::Values(DType::F32, DType::F16),
                         [](const auto& info) { return info.param == DType::F16 ? "fp16" : "fp32"; });

// A cross-encoder (a one-label BertForSequenceClassification, tests/hf/bert/cross_encoder)
// scoring text pairs as sentence-transformers' CrossEncoder.predict (max_length 64: the
// model's positions) does: pairs cut by longest_first, the second text's tokens type 1,
// sigmoid of the logit.
TEST_P(Embed, CrossEncoderScoresPairsAsSentenceTransformers) {
  const fs::path dir = kDir.parent_path() / "cross_encoder";
  const nlohmann::json refs = read_references(dir / "references.json");
  Embedder e(Model::load(ctx(), dir.string(), GetParam()), ModelFiles(dir.string()));
  EXPECT_EQ(e.config().max_tokens, 64u);
  std::vector<std::pair<std::string, std::string>> pairs;
  for (const auto& p : refs["pairs"]) pairs.push_back({p[0], p[1]});
  e.batch_size = 3;
  const std::vector<float> got = e.score_pairs(pairs);
  ASSERT_EQ(got.size(), pairs.size());
  for (size_t i = 0; i < pairs.size(); ++i)
    EXPECT_NEAR(got[i], refs["scores"][i].get<double>(), GetParam() == DType::F16 ? 1e-2 : 1e-5) << "pair " << i;
  // An embedding model has no classifier to score with.
  Embedder plain(Model::load(ctx(), kDir.string(), DType::F32), ModelFiles(kDir.string()));
  try {
    (void)plain.score_pairs(pairs);
    ADD_FAILURE() << "scored without a classifier";
  } catch (const Error& err) {
    EXPECT_NE(std::string(err.what()).find("has no classifier; a cross-encoder's is one label"), std::string::npos) << err.what();
  }
}

TEST_F(GpuTest, EmbedderRefusesWhatItDoesNotRunByName) {
  auto model = Model::load(ctx(), kDir.string(), DType::F32);
  auto refused = [&](MemoryModel m, const std::string& words) {
    SCOPED_TRACE(words);
    try {
      Embedder e(model, m.model_files());
      ADD_FAILURE() << "accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
    }
  };
  const nlohmann::json mean = {"mean"};
  MemoryModel m(mean, true);
  auto pooling = nlohmann::json::parse(m.files["1_Pooling_config.json"]);
  {
    MemoryModel b = m;
    auto p = pooling;
    p["pooling_mode_weightedmean_tokens"] = true;
    b.files["1_Pooling_config.json"] = p.dump();
    refused(b, "pooling_mode_weightedmean_tokens is set");
    p = pooling, p["pooling_mode_lasttoken"] = true;
    b.files["1_Pooling_config.json"] = p.dump();
    refused(b, "pooling_mode_lasttoken is set");
    p = pooling, p["pooling_mode_mean_tokens"] = false;
    b.files["1_Pooling_config.json"] = p.dump();
    refused(b, "sets no pooling mode");
    p = pooling, p["word_embedding_dimension"] = 384;
    b.files["1_Pooling_config.json"] = p.dump();
    refused(b, "word_embedding_dimension 384 is not the model's width 32");
  }
  {
    MemoryModel b = m;
    auto modules = nlohmann::json::parse(b.files["modules.json"]);
    modules.push_back({{"idx", 3}, {"name", "3"}, {"path", "3_Dense"}, {"type", "sentence_transformers.models.Dense"}});
    b.files["modules.json"] = modules.dump();
    refused(b, "module Dense is not supported");
    b.files["modules.json"] = R"([{"type": "my_package.Custom", "path": ""}])";
    refused(b, "is not one of sentence_transformers.models");
    b.files["modules.json"] = "[" + std::string(100, '[') ;
    refused(b, "modules.json");
    b.files["modules.json"] = R"([{"type": "sentence_transformers.models.Transformer", "path": ""},
        {"type": "sentence_transformers.models.Pooling", "path": "../elsewhere"}])";
    refused(b, "must be a folder of the model directory");
  }
  {
    MemoryModel b = m;
    b.files["sentence_bert_config.json"] = R"({"max_seq_length": 24, "do_lower_case": true})";
    refused(b, "do_lower_case is true");
  }
  // Text that is no text: named with its index.
  Embedder e(model, m.model_files());
  try {
    (void)e.embed({"fine", std::string("bad \xC3 utf8")});
    ADD_FAILURE() << "broken UTF-8 accepted";
  } catch (const Error& err) {
    EXPECT_NE(std::string(err.what()).find("text 1: the text is not valid UTF-8"), std::string::npos) << err.what();
  }
  EXPECT_EQ(e.embed({}).count, 0u);
}

}  // namespace
}  // namespace vkf::test
