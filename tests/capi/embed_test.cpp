// vkf_embed: sentence embeddings through the C API, from a directory and from files in
// memory (tests/hf/bert/sentence, against sentence-transformers' references), and its
// error paths: NULLs, struct sizes, buffers too small, models that embed nothing.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "capi/open_model.hpp"
#include "vkformer/vkformer.h"

namespace {

using vkf::capi_test::error_mentions;
using vkf::capi_test::kDates;

const std::string kSentence = std::string(VKF_SOURCE_DIR) + "/tests/hf/bert/sentence";

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

struct Embedding {
  vkf_context* context = nullptr;
  vkf_model* model = nullptr;
  ~Embedding() {
    vkf_model_free(model);
    vkf_context_free(context);
  }
};

void expect_like_references(const std::vector<float>& got, const std::vector<size_t>& which) {
  const nlohmann::json refs = nlohmann::json::parse(slurp(kSentence + "/references.json"));
  for (size_t k = 0; k < which.size(); ++k) {
    const std::vector<double> want = refs["variants"]["directory"]["embeddings"][which[k]];
    double err = 0, scale = 0;
    for (size_t c = 0; c < 32; ++c) err = std::max(err, std::fabs(got[k * 32 + c] - want[c])), scale = std::max(scale, std::fabs(want[c]));
    EXPECT_LT(err, 1e-4 * scale) << "text " << which[k];
  }
}

TEST(CApiEmbed, EmbedsAsSentenceTransformersFromADirectoryAndFromMemory) {
  const nlohmann::json refs = nlohmann::json::parse(slurp(kSentence + "/references.json"));
  const std::vector<std::string> all = refs["texts"];
  const std::vector<size_t> which = {0, 8, 12};  // one cut at max_seq_length 24
  std::vector<const char*> texts;
  for (size_t i : which) texts.push_back(all[i].c_str());

  Embedding e;
  vkf_context_options o = vkf_context_options_default();
  o.validation = 1;
  ASSERT_EQ(vkf_context_create(&o, &e.context), VKF_OK) << vkf_last_error();
  ASSERT_EQ(vkf_model_load(e.context, kSentence.c_str(), VKF_PRECISION_FP32, &e.model), VKF_OK) << vkf_last_error();
  uint32_t width = 0;
  ASSERT_EQ(vkf_embedding_width(e.model, &width), VKF_OK) << vkf_last_error();
  EXPECT_EQ(width, 32u);
  size_t needed = 0;
  EXPECT_EQ(vkf_embed(e.model, texts.data(), texts.size(), nullptr, nullptr, 0, &needed), VKF_ERROR_BUFFER_TOO_SMALL);
  EXPECT_EQ(needed, 3u * 32);
  std::vector<float> out(needed, NAN);
  vkf_embed_options eo = vkf_embed_options_default();
  eo.batch_size = 2;
  ASSERT_EQ(vkf_embed(e.model, texts.data(), texts.size(), &eo, out.data(), out.size(), &needed), VKF_OK) << vkf_last_error();
  expect_like_references(out, which);

  // The same model from files in memory (its pooling config as "1_Pooling_config.json").
  std::vector<std::pair<std::string, std::string>> files;
  for (const char* name : {"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json", "vocab.txt",
                           "modules.json", "sentence_bert_config.json"})
    files.push_back({name, slurp(kSentence + "/" + name)});
  files.push_back({"1_Pooling_config.json", slurp(kSentence + "/1_Pooling/config.json")});
  std::vector<vkf_memory_file> memory;
  for (const auto& [name, bytes] : files) memory.push_back({name.c_str(), bytes.data(), bytes.size()});
  vkf_model* from_memory = nullptr;
  ASSERT_EQ(vkf_model_load_from_memory(e.context, memory.data(), memory.size(), VKF_PRECISION_FP32, &from_memory), VKF_OK)
      << vkf_last_error();
  files.clear();  // the bytes were the caller's during the load only
  std::fill(out.begin(), out.end(), NAN);
  EXPECT_EQ(vkf_embed(from_memory, texts.data(), texts.size(), nullptr, out.data(), out.size(), nullptr), VKF_OK)
      << vkf_last_error();
  expect_like_references(out, which);
  vkf_model_free(from_memory);
}

TEST(CApiEmbed, ErrorsAreStatusesThatNameWhatIsWrong) {
  Embedding e;
  vkf_context_options o = vkf_context_options_default();
  o.validation = 1;
  ASSERT_EQ(vkf_context_create(&o, &e.context), VKF_OK) << vkf_last_error();
  ASSERT_EQ(vkf_model_load(e.context, kSentence.c_str(), VKF_PRECISION_FP32, &e.model), VKF_OK) << vkf_last_error();
  const char* texts[] = {"fine", nullptr};
  float out[64];
  uint32_t width = 0;
  EXPECT_EQ(vkf_embedding_width(nullptr, &width), VKF_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(vkf_embedding_width(e.model, nullptr), VKF_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(vkf_embed(nullptr, texts, 1, nullptr, out, 64, nullptr), VKF_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(vkf_embed(e.model, nullptr, 1, nullptr, out, 64, nullptr), VKF_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(vkf_embed(e.model, texts, 2, nullptr, out, 64, nullptr), VKF_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(error_mentions("texts[1] is NULL")) << vkf_last_error();
  EXPECT_EQ(vkf_embed(e.model, texts, 1, nullptr, nullptr, 64, nullptr), VKF_ERROR_INVALID_ARGUMENT);
  vkf_embed_options eo = vkf_embed_options_default();
  eo.struct_size = 2;
  EXPECT_EQ(vkf_embed(e.model, texts, 1, &eo, out, 64, nullptr), VKF_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(error_mentions("vkf_embed_options")) << vkf_last_error();
  eo = vkf_embed_options_default();
  eo.batch_size = 0;
  EXPECT_EQ(vkf_embed(e.model, texts, 1, &eo, out, 64, nullptr), VKF_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(error_mentions("batch_size must be 1 to 4096")) << vkf_last_error();
  const char* broken[] = {"fine", "bad \xC3 utf8"};
  EXPECT_EQ(vkf_embed(e.model, broken, 2, nullptr, out, 64, nullptr), VKF_ERROR_INVALID_INPUT);
  EXPECT_TRUE(error_mentions("text 1: the text is not valid UTF-8")) << vkf_last_error();
  ASSERT_EQ(vkf_model_set_text_limit(e.model, 3), VKF_OK);
  EXPECT_EQ(vkf_embed(e.model, texts, 1, nullptr, out, 64, nullptr), VKF_ERROR_INVALID_INPUT);
  EXPECT_TRUE(error_mentions("text 0 is longer than the model's text limit of 3 bytes")) << vkf_last_error();
  size_t needed = 7;
  EXPECT_EQ(vkf_embed(e.model, texts, 0, nullptr, nullptr, 0, &needed), VKF_OK);
  EXPECT_EQ(needed, 0u);
  // Models that embed nothing: a sequence-to-sequence model, a BERT without a tokenizer.
  for (const std::string& dir : {kDates, std::string(VKF_SOURCE_DIR) + "/tests/hf/bert/base"}) {
    vkf_model* m = nullptr;
    ASSERT_EQ(vkf_model_load(e.context, dir.c_str(), VKF_PRECISION_FP32, &m), VKF_OK) << vkf_last_error();
    EXPECT_EQ(vkf_embedding_width(m, &width), VKF_ERROR_UNSUPPORTED);
    EXPECT_TRUE(error_mentions(dir == kDates ? "sentence embeddings come from encoder-only models" : "has no tokenizer"))
        << vkf_last_error();
    EXPECT_EQ(vkf_embed(m, texts, 1, nullptr, out, 64, nullptr), VKF_ERROR_UNSUPPORTED);
    vkf_model_free(m);
  }
}

}  // namespace

namespace {

// transformers' processors and beams through vkf_generate_options' ABI 7 fields, on a
// decoder-only model: the tokens transformers' generate() gives
// (tests/hf/generate_references.json), and malformed fields named.
TEST(CApiGenerate, ProcessorsAndBeamsAsTransformers) {
  const nlohmann::json refs = nlohmann::json::parse(slurp(std::string(VKF_SOURCE_DIR) + "/tests/hf/generate_references.json"));
  const nlohmann::json& m = refs["models"]["llama/gqa"];
  vkf::capi_test::Handles h;
  h.open(std::string(VKF_SOURCE_DIR) + "/tests/hf/llama/gqa");
  const std::vector<uint32_t> prompt = m["prompts"]["single"][0];
  auto run = [&](const vkf_generate_options& o) {
    std::vector<uint32_t> tokens(64);
    size_t count = 0;
    EXPECT_EQ(vkf_generate(h.session, prompt.data(), prompt.size(), &o, tokens.data(), tokens.size(), &count), VKF_OK)
        << vkf_last_error();
    tokens.resize(count);
    return tokens;
  };
  const auto& all = m["cases"]["all_processors"]["single"];
  vkf_generate_options o = vkf_generate_options_default();
  o.max_new_tokens = refs["max_new_tokens"];
  o.repetition_penalty = all["kwargs"]["repetition_penalty"];
  o.no_repeat_ngram_size = all["kwargs"]["no_repeat_ngram_size"];
  o.min_new_tokens = all["kwargs"]["min_new_tokens"];
  std::vector<uint32_t> bad;
  for (const auto& seq : all["kwargs"]["bad_words_ids"]) {
    bad.push_back(uint32_t(seq.size()));
    for (const auto& id : seq) bad.push_back(id);
  }
  o.bad_words = bad.data();
  o.bad_words_length = bad.size();
  EXPECT_EQ(run(o), all["outputs"][0].get<std::vector<uint32_t>>());
  vkf_generate_options b = vkf_generate_options_default();
  b.max_new_tokens = refs["max_new_tokens"];
  b.beam = 4;
  b.early_stopping = 3;  // "never"
  EXPECT_EQ(run(b), m["cases"]["beam4_never"]["single"]["outputs"][0].get<std::vector<uint32_t>>());
  // A model's own processor turned off: none here to turn off, so the plain greedy tokens.
  vkf_generate_options off = vkf_generate_options_default();
  off.max_new_tokens = refs["max_new_tokens"];
  off.no_repeat_ngram_size = VKF_PROCESSOR_OFF;
  EXPECT_EQ(run(off), m["cases"]["greedy"]["single"]["outputs"][0].get<std::vector<uint32_t>>());
  std::vector<uint32_t> tokens(64);
  size_t count = 0;
  const uint32_t broken[] = {3, 5, 17};  // a length of 3 with two ids after it
  vkf_generate_options e = vkf_generate_options_default();
  e.bad_words = broken;
  e.bad_words_length = 3;
  EXPECT_EQ(vkf_generate(h.session, prompt.data(), prompt.size(), &e, tokens.data(), 64, &count), VKF_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(error_mentions("runs past bad_words_length")) << vkf_last_error();
  e = vkf_generate_options_default();
  e.early_stopping = 7;
  EXPECT_EQ(vkf_generate(h.session, prompt.data(), prompt.size(), &e, tokens.data(), 64, &count), VKF_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(error_mentions("early_stopping must be 0")) << vkf_last_error();
}

}  // namespace
