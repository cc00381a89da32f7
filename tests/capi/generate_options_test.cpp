// The CLI's generation options from C (issue 26, item 7): a Hugging Face model's own
// processors (against transformers' outputs), a decoder-only text prompt's continuation,
// the repetition penalty (the model's own by default), more end tokens, a stop string and
// steps per submit, each against the C++ API the GPT-2 tests hold to transformers, and
// each option's errors by status and name.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <unistd.h>
#include <vector>

#include "capi/open_model.hpp"
#include "vkformer/vkformer.h"
#include "vkformer/vkformer.hpp"

namespace {

namespace fs = std::filesystem;
using vkf::capi_test::error_mentions;
using vkf::capi_test::Handles;

const std::string kGpt2 = std::string(VKF_SOURCE_DIR) + "/tests/hf/gpt2/lm";
const std::vector<uint32_t> kPrompt = {5, 17, 9, 300, 41};

std::vector<uint32_t> generate(vkf_session* s, const vkf_generate_options& o, vkf_status expect = VKF_OK) {
  std::vector<uint32_t> tokens(256);
  size_t count = 0;
  const vkf_status st = vkf_generate(s, kPrompt.data(), kPrompt.size(), &o, tokens.data(), tokens.size(), &count);
  EXPECT_EQ(st, expect) << vkf_last_error();
  tokens.resize(st == VKF_OK ? count : 0);
  return tokens;
}

// The C++ API's greedy tokens for kPrompt under `o` (what the GPT-2 tests compare with
// transformers), on its own context.
std::vector<uint32_t> reference(const std::string& dir, vkf::GenerateOptions o) {
  vkf::Context ctx;
  vkf::Session session(vkf::Model::load(ctx, dir));
  return session.generate({kPrompt}, o)[0];
}

vkf_generate_options greedy(uint32_t new_tokens) {
  vkf_generate_options o = vkf_generate_options_default();
  o.max_new_tokens = new_tokens;
  return o;
}

// Greedy decoding from C applies generation_config.json's processors (BART: min_length,
// no_repeat_ngram_size, forced BOS and EOS; Marian: bad words, forced EOS) as
// transformers' generate(num_beams=1) does: the references are its outputs.
TEST(CApiOptions, AHuggingFaceModelsProcessorsApplyAsInTransformers) {
  const nlohmann::json refs = nlohmann::json::parse(std::ifstream(std::string(VKF_SOURCE_DIR) + "/tests/hf/references.json"));
  for (const std::string family : {"bart", "marian"}) {
    SCOPED_TRACE(family);
    Handles h;
    h.open(std::string(VKF_SOURCE_DIR) + "/tests/hf/" + family);
    const auto& r = refs[family];
    const auto& greedy_ids = r["generate"]["greedy"]["ids"];
    ASSERT_EQ(r["sources"].size(), greedy_ids.size());
    for (size_t i = 0; i < greedy_ids.size(); ++i) {
      const auto source = r["sources"][i].get<std::vector<uint32_t>>();
      const auto want = greedy_ids[i].get<std::vector<uint32_t>>();
      vkf_generate_options o = vkf_generate_options_default();
      o.max_new_tokens = uint32_t(want.size());  // transformers' max_length less the start token
      std::vector<uint32_t> tokens(64);
      size_t count = 0;
      ASSERT_EQ(vkf_generate(h.session, source.data(), source.size(), &o, tokens.data(), tokens.size(), &count), VKF_OK)
          << vkf_last_error();
      tokens.resize(count);
      EXPECT_EQ(tokens, want) << "source " << i;
    }
  }
}

TEST(CApiOptions, TextPromptContinuesAsTheIdsDo) {
  Handles h;
  h.open(kGpt2);
  const char* prompt = "Hello world, this is";
  std::vector<uint32_t> ids(64);
  size_t n = 0;
  ASSERT_EQ(vkf_tokenize(h.model, prompt, ids.data(), ids.size(), &n), VKF_OK) << vkf_last_error();
  ids.resize(n);
  vkf_generate_options o = greedy(8);
  std::vector<uint32_t> out(64);
  size_t count = 0;
  ASSERT_EQ(vkf_generate(h.session, ids.data(), ids.size(), &o, out.data(), out.size(), &count), VKF_OK);
  ASSERT_EQ(count, 8u);
  char expected[512], text[512];
  size_t needed = 0;
  ASSERT_EQ(vkf_detokenize(h.model, out.data(), count, expected, sizeof expected, &needed), VKF_OK);
  ASSERT_EQ(vkf_translate(h.session, prompt, &o, text, sizeof text, &needed), VKF_OK) << vkf_last_error();
  EXPECT_STREQ(text, expected);  // the continuation only, as `vkformer generate --prompt`
}

TEST(CApiOptions, RepetitionPenaltyIsTheCallersOrTheModels) {
  // A copy of the model whose generation_config.json asks for a penalty of 1.5.
  const fs::path dir = fs::temp_directory_path() / ("vkf_capi_penalty_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::copy(kGpt2, dir);
  std::ofstream(dir / "generation_config.json") << R"({"bos_token_id": 50256, "eos_token_id": 50256, "repetition_penalty": 1.5})";
  vkf::GenerateOptions plain{.max_new_tokens = 24}, penalised = plain, strong = plain;
  penalised.repetition_penalty = 1.5f;
  strong.repetition_penalty = 3.0f;
  const auto want_plain = reference(dir.string(), plain), want_model = reference(dir.string(), penalised),
             want_strong = reference(dir.string(), strong);
  ASSERT_NE(want_plain, want_model) << "a penalty of 1.5 must change this prompt's 24 tokens, or the test proves nothing";
  {
    Handles h;
    h.open(dir.string());
    vkf_model_info info{};
    info.struct_size = sizeof info;
    ASSERT_EQ(vkf_model_info_get(h.model, &info), VKF_OK);
    EXPECT_FLOAT_EQ(info.default_repetition_penalty, 1.5f);
    vkf_generate_options o = greedy(24);  // repetition_penalty 0: the model's
    EXPECT_EQ(generate(h.session, o), want_model);
    o.repetition_penalty = 1.0f;
    EXPECT_EQ(generate(h.session, o), want_plain);
    o.repetition_penalty = 3.0f;
    EXPECT_EQ(generate(h.session, o), want_strong);
    for (float bad : {-1.0f, 101.0f, std::nanf("")}) {
      o.repetition_penalty = bad;
      generate(h.session, o, VKF_ERROR_INVALID_ARGUMENT);
      EXPECT_TRUE(error_mentions("vkf_generate_options.repetition_penalty")) << vkf_last_error();
    }
  }
  fs::remove_all(dir);
}

TEST(CApiOptions, MoreEndTokensAndAStopStringEndAnOutputWhereTheCliWould) {
  Handles h;
  h.open(kGpt2);
  vkf_generate_options o = greedy(24);
  const auto all = generate(h.session, o);
  ASSERT_EQ(all.size(), 24u);

  // An end token: the output stops at its first occurrence, which it keeps.
  const uint32_t end = all[5];
  const uint32_t ends[] = {7, end};
  size_t first = 0;
  while (all[first] != 7 && all[first] != end) ++first;
  ASSERT_LE(first, 5u);
  o.eos_ids = ends;
  o.eos_id_count = 2;
  EXPECT_EQ(generate(h.session, o), std::vector<uint32_t>(all.begin(), all.begin() + first + 1));
  vkf::GenerateOptions cpp{.max_new_tokens = 24};
  cpp.eos_ids = {7, end};
  EXPECT_EQ(generate(h.session, o), reference(kGpt2, cpp));

  // A stop string: the text of tokens 3 to 6, so the output ends at the token that
  // completes it (the C++ API's stop test, as `vkformer generate --stop` builds it).
  o = greedy(24);
  char text[1024];
  size_t needed = 0;
  ASSERT_EQ(vkf_detokenize(h.model, all.data() + 3, 4, text, sizeof text, &needed), VKF_OK);
  const std::string stop = text;
  ASSERT_FALSE(stop.empty());
  std::string stop_kept = stop;
  o.stop = stop_kept.c_str();
  const auto stopped = generate(h.session, o);
  vkf::Context ctx;
  const auto model = vkf::Model::load(ctx, kGpt2);
  const auto tok = vkf::Tokenizer::for_model(kGpt2);
  vkf::GenerateOptions with_stop{.max_new_tokens = 24};
  with_stop.stop = [&](size_t, const std::vector<uint32_t>& t) { return tok->decode(t).find(stop) != std::string::npos; };
  vkf::Session session(model);
  EXPECT_EQ(stopped, session.generate({kPrompt}, with_stop)[0]);
  EXPECT_LE(stopped.size(), 7u);
  EXPECT_LT(stopped.size(), all.size());
  EXPECT_NE(tok->decode(stopped).find(stop), std::string::npos);

  // From a job, the stop string freed before the job runs.
  {
    std::string transient = stop;
    o.stop = transient.c_str();
    vkf_job* job = nullptr;
    ASSERT_EQ(vkf_generate_start(h.session, kPrompt.data(), kPrompt.size(), &o, &job), VKF_OK) << vkf_last_error();
    transient.assign(transient.size(), 'x');
    transient.clear();
    transient.shrink_to_fit();
    ASSERT_EQ(vkf_job_wait(job, 60000), VKF_OK) << vkf_last_error();
    std::vector<uint32_t> tokens(64);
    size_t n = 0;
    ASSERT_EQ(vkf_job_tokens(job, tokens.data(), tokens.size(), &n), VKF_OK);
    tokens.resize(n);
    EXPECT_EQ(tokens, stopped);
    vkf_job_free(job);
  }

  // The stop string and a callback that ends outputs work together.
  o.stop = stop_kept.c_str();  // (the job's string is gone)
  struct Ender {
    static int on_token(void* user, size_t, uint32_t, const char*, size_t) { return ++*static_cast<int*>(user) >= 2; }
  };
  int seen = 0;
  o.on_token = &Ender::on_token;
  o.on_token_user = &seen;
  EXPECT_EQ(generate(h.session, o).size(), std::min<size_t>(2, stopped.size()));
}

TEST(CApiOptions, StepsPerSubmitChangeTheSubmitsNotTheTokens) {
  Handles h;
  h.open(kGpt2);
  vkf_generate_options o = greedy(16);
  o.submit_budget_ms = 0;
  const auto many = generate(h.session, o);
  vkf_generate_stats s{};
  s.struct_size = sizeof s;
  ASSERT_EQ(vkf_session_stats(h.session, &s), VKF_OK);
  const uint64_t submits_default = s.submits;
  o.max_steps_per_submit = 1;
  EXPECT_EQ(generate(h.session, o), many);
  ASSERT_EQ(vkf_session_stats(h.session, &s), VKF_OK);
  EXPECT_GT(s.submits, submits_default);
  EXPECT_GE(s.submits, 16u);  // one step a submit
}

TEST(CApiOptions, EachOptionsErrorIsAStatusThatNamesIt) {
  Handles h;
  h.open(kGpt2);
  vkf_generate_options o = greedy(4);
  o.eos_id_count = 2;  // and eos_ids NULL
  generate(h.session, o, VKF_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(error_mentions("eos_ids is NULL")) << vkf_last_error();
  const uint32_t outside[] = {50257};
  o.eos_ids = outside;
  o.eos_id_count = 1;
  generate(h.session, o, VKF_ERROR_INVALID_INPUT);
  EXPECT_TRUE(error_mentions("50257")) << vkf_last_error();
  o.eos_id_count = 5000;
  generate(h.session, o, VKF_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(error_mentions("eos_id_count")) << vkf_last_error();

  o = greedy(4);
  o.stop = "";
  generate(h.session, o, VKF_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(error_mentions("stop is empty")) << vkf_last_error();
  o.stop = "the";
  o.beam = 2;
  generate(h.session, o, VKF_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(error_mentions("beam search")) << vkf_last_error();
  o.beam = 1;
  o.eos_ids = outside;
  o.eos_id_count = 0;  // a count of 0 ignores the pointer
  EXPECT_EQ(generate(h.session, o).size() <= 4, true);

  // A model without a tokenizer cannot stop at text.
  Handles llama;
  llama.open(std::string(VKF_SOURCE_DIR) + "/tests/hf/llama/gqa");
  o = greedy(4);
  o.stop = "a";
  generate(llama.session, o, VKF_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(error_mentions("tokenizer")) << vkf_last_error();
}

}  // namespace
