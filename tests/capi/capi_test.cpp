// The C API, every function and its error paths: NULL handles and pointers, wrong
// struct sizes, buffers too small, bad models and devices, ids outside the vocabulary.
// Each failure must be a status with a message that names what is wrong, never a crash
// or an exception crossing into C.
#include <fstream>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <mutex>
#include <unistd.h>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "capi/open_model.hpp"
#include "support/app_vulkan.hpp"
#include "vkformer/vkformer.h"
#include "vkformer/vkformer.hpp"

extern "C" int vkf_test_c99_header(void);

namespace {

using vkf::capi_test::error_mentions;
using vkf::capi_test::Handles;
using vkf::capi_test::kDates;

namespace fs = std::filesystem;

// vkformer's messages as an app's log callback receives them: "<level> <text>".
struct Messages {
  std::mutex mutex;
  std::vector<std::string> text;
  static void record(void* user, vkf_log_level level, const char* message) {
    auto* m = static_cast<Messages*>(user);
    std::lock_guard lock(m->mutex);
    m->text.push_back(std::to_string(int(level)) + " " + message);
  }
};

// Context options with validation on, the caches in `cache_dir` (which must outlive
// them) and the messages going to `m`.
vkf_context_options logged_options(Messages& m, const std::string& cache_dir) {
  vkf_context_options co = vkf_context_options_default();
  co.validation = 1;
  co.cache_dir = cache_dir.c_str();
  co.log = &Messages::record;
  co.log_user = &m;
  return co;
}

// The app's Vulkan objects as the C API borrows them.
vkf_borrowed_vulkan lend(const vkf::test::AppVulkan& app) {
  vkf_borrowed_vulkan b{};
  b.struct_size = sizeof b;
  b.instance = app.instance;
  b.api_version = VK_API_VERSION_1_1;
  b.physical_device = app.physical;
  b.device = app.device;
  b.queue_family = app.family;
  b.queue = app.queue;
  b.enabled_features = &app.features;
  return b;
}

TEST(CApi, HeaderIsC99AndVersionsAgree) {
  EXPECT_EQ(vkf_test_c99_header(), 1);
  EXPECT_EQ(vkf_abi_version(), VKF_ABI_VERSION);
  EXPECT_STREQ(vkf_version(), "0.1.0");
}

TEST(CApi, DevicesAreListedWithCallerOwnedNames) {
  uint32_t n = 0;
  ASSERT_EQ(vkf_device_count(&n), VKF_OK) << vkf_last_error();
  ASSERT_GE(n, 1u);
  EXPECT_EQ(vkf_device_count(nullptr), VKF_ERROR_INVALID_ARGUMENT);
  size_t needed = 0;
  char tiny[2];
  EXPECT_EQ(vkf_device_name(0, tiny, sizeof tiny, &needed), VKF_ERROR_BUFFER_TOO_SMALL);
  EXPECT_GT(needed, sizeof tiny);
  EXPECT_TRUE(error_mentions("buffer holds 2"));
  std::vector<char> name(needed);
  ASSERT_EQ(vkf_device_name(0, name.data(), name.size(), nullptr), VKF_OK);
  EXPECT_EQ(std::strlen(name.data()) + 1, needed);
  EXPECT_EQ(vkf_device_name(n, name.data(), name.size(), nullptr), VKF_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(error_mentions("does not exist"));
}

TEST(CApi, ContextErrors) {
  vkf_context* c = nullptr;
  EXPECT_EQ(vkf_context_create(nullptr, nullptr), VKF_ERROR_INVALID_ARGUMENT);
  vkf_context_options o = vkf_context_options_default();
  o.struct_size = 4;  // a caller built against another layout
  EXPECT_EQ(vkf_context_create(&o, &c), VKF_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(error_mentions("struct_size"));
  o = vkf_context_options_default();
  o.device = "no-such-gpu-anywhere";
  EXPECT_EQ(vkf_context_create(&o, &c), VKF_ERROR_FAILED);
  EXPECT_TRUE(error_mentions("no-such-gpu-anywhere")) << vkf_last_error();
  EXPECT_EQ(c, nullptr);
  EXPECT_EQ(vkf_context_device_name(nullptr, nullptr, 0, nullptr), VKF_ERROR_INVALID_ARGUMENT);
  vkf_context_free(nullptr);  // accepted
}

TEST(CApi, ModelAndSessionErrors) {
  Handles h;
  ASSERT_EQ(vkf_context_create(nullptr, &h.context), VKF_OK) << vkf_last_error();
  vkf_model* m = nullptr;
  EXPECT_EQ(vkf_model_load(nullptr, kDates.c_str(), VKF_PRECISION_FP32, &m), VKF_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(vkf_model_load(h.context, nullptr, VKF_PRECISION_FP32, &m), VKF_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(vkf_model_load(h.context, kDates.c_str(), vkf_precision(7), &m), VKF_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(vkf_model_load(h.context, kDates.c_str(), VKF_PRECISION_FP32, nullptr), VKF_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(vkf_model_load(h.context, "/no/such/model", VKF_PRECISION_FP32, &m), VKF_ERROR_NOT_FOUND);
  EXPECT_TRUE(error_mentions("/no/such/model")) << vkf_last_error();
  EXPECT_TRUE(error_mentions("does not exist")) << vkf_last_error();
  EXPECT_EQ(m, nullptr);
  // A GGUF file that holds no model's metadata: refused, naming what is missing; one that
  // does loads, from a path and from memory.
  const std::string gguf = std::string(VKF_SOURCE_DIR) + "/tests/gguf/reader.gguf";
  EXPECT_EQ(vkf_model_load(h.context, gguf.c_str(), VKF_PRECISION_FP32, &m), VKF_ERROR_FAILED);
  EXPECT_TRUE(error_mentions("missing llama.embedding_length")) << vkf_last_error();
  EXPECT_EQ(m, nullptr);
  const std::string q8 = std::string(VKF_SOURCE_DIR) + "/tests/gguf/llama_tied/llama_tied.Q8_0.gguf";
  ASSERT_EQ(vkf_model_load(h.context, q8.c_str(), VKF_PRECISION_FP32, &m), VKF_OK) << vkf_last_error();
  vkf_model_free(m);
  m = nullptr;
  std::ifstream in(q8, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), {});
  const vkf_memory_file file{"llama_tied.Q8_0.gguf", bytes.data(), bytes.size()};
  ASSERT_EQ(vkf_model_load_from_memory(h.context, &file, 1, VKF_PRECISION_FP32, &m), VKF_OK) << vkf_last_error();
  vkf_model_free(m);
  m = nullptr;
  // A tokenizer vkformer does not read (a pre-tokenizer name it does not know): the model
  // loads and takes ids.
  std::ifstream in2(std::string(VKF_SOURCE_DIR) + "/tests/gguf/gpt2/gpt2.Q8_0.gguf", std::ios::binary);
  std::string gpt2((std::istreambuf_iterator<char>(in2)), {});
  ASSERT_NE(gpt2.find("gpt-2"), std::string::npos);
  gpt2.replace(gpt2.find("gpt-2"), 5, "gpt-9");
  const vkf_memory_file file2{"gpt2.gguf", gpt2.data(), gpt2.size()};
  ASSERT_EQ(vkf_model_load_from_memory(h.context, &file2, 1, VKF_PRECISION_FP32, &m), VKF_OK) << vkf_last_error();
  vkf_model_free(m);
  m = nullptr;
  vkf_session* s = nullptr;
  EXPECT_EQ(vkf_session_create(nullptr, &s), VKF_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(vkf_session_create(nullptr, nullptr), VKF_ERROR_INVALID_ARGUMENT);
  vkf_model_free(nullptr);
  vkf_session_free(nullptr);
}

// vkf_model_load_with: the date translator's weights in Q8_0 blocks translate as in fp32;
// NULL options are the defaults; a struct_size or value out of range is refused by name.
TEST(CApi, LoadWithWeightsInBlocks) {
  Handles h;
  ASSERT_EQ(vkf_context_create(nullptr, &h.context), VKF_OK) << vkf_last_error();
  vkf_load_options o = vkf_load_options_default();
  EXPECT_EQ(o.struct_size, sizeof o);
  EXPECT_EQ(o.weights, VKF_WEIGHTS_PRECISION);
  o.weights = VKF_WEIGHTS_Q8_0;
  ASSERT_EQ(vkf_model_load_with(h.context, kDates.c_str(), &o, &h.model), VKF_OK) << vkf_last_error();
  ASSERT_EQ(vkf_session_create(h.model, &h.session), VKF_OK) << vkf_last_error();
  char out[64];
  ASSERT_EQ(vkf_translate(h.session, "the 3rd of March 1998", nullptr, out, sizeof out, nullptr), VKF_OK)
      << vkf_last_error();
  EXPECT_STREQ(out, "1998-03-03");
  vkf_model* m = nullptr;
  ASSERT_EQ(vkf_model_load_with(h.context, kDates.c_str(), nullptr, &m), VKF_OK) << vkf_last_error();
  vkf_model_free(m);
  m = nullptr;
  o.weights = vkf_weights(11);
  EXPECT_EQ(vkf_model_load_with(h.context, kDates.c_str(), &o, &m), VKF_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(error_mentions("vkf_load_options.weights")) << vkf_last_error();
  // llama.cpp's mixes are for decoder-only models: the date translator's refused by name.
  o.weights = VKF_WEIGHTS_Q4_K_M;
  EXPECT_NE(vkf_model_load_with(h.context, kDates.c_str(), &o, &m), VKF_OK);
  EXPECT_TRUE(error_mentions("decoder-only")) << vkf_last_error();
  EXPECT_EQ(m, nullptr);
  o = vkf_load_options_default();
  o.struct_size = 3;
  EXPECT_EQ(vkf_model_load_with(h.context, kDates.c_str(), &o, &m), VKF_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(error_mentions("struct_size")) << vkf_last_error();
  EXPECT_EQ(vkf_model_load_with(h.context, kDates.c_str(), nullptr, nullptr), VKF_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(vkf_model_load_from_memory_with(h.context, nullptr, 0, nullptr, &m), VKF_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(m, nullptr);
}

TEST(CApi, TranslateTextIntoACallerBuffer) {
  Handles h;
  h.open();
  char name[256];
  ASSERT_EQ(vkf_context_device_name(h.context, name, sizeof name, nullptr), VKF_OK);
  char out[64];
  size_t needed = 0;
  ASSERT_EQ(vkf_translate(h.session, "3/3/98", nullptr, out, sizeof out, &needed), VKF_OK) << vkf_last_error();
  EXPECT_STREQ(out, "1998-03-03");
  EXPECT_EQ(needed, 11u);
  char small[4] = {'x', 'x', 'x', 0};
  EXPECT_EQ(vkf_translate(h.session, "3/3/98", nullptr, small, sizeof small, &needed), VKF_ERROR_BUFFER_TOO_SMALL);
  EXPECT_EQ(needed, 11u);
  EXPECT_STREQ(small, "xxx") << "nothing may be written when the result does not fit";
  vkf_generate_options o = vkf_generate_options_default();
  o.beam = 3;
  ASSERT_EQ(vkf_translate(h.session, "March 3, 1998", &o, out, sizeof out, nullptr), VKF_OK) << vkf_last_error();
  EXPECT_STREQ(out, "1998-03-03");
  EXPECT_EQ(vkf_translate(nullptr, "x", nullptr, out, sizeof out, nullptr), VKF_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(vkf_translate(h.session, nullptr, nullptr, out, sizeof out, nullptr), VKF_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(vkf_translate(h.session, "", nullptr, out, sizeof out, nullptr), VKF_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(error_mentions("empty"));
  o.struct_size = 8;
  EXPECT_EQ(vkf_translate(h.session, "3/3/98", &o, out, sizeof out, nullptr), VKF_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(error_mentions("struct_size"));
}

TEST(CApi, GenerateTokenIds) {
  Handles h;
  h.open();
  const uint32_t src[] = {5, 6, 7};
  uint32_t tokens[64];
  size_t count = 0;
  vkf_generate_options o = vkf_generate_options_default();
  o.max_new_tokens = 5;
  ASSERT_EQ(vkf_generate(h.session, src, 3, &o, tokens, 64, &count), VKF_OK) << vkf_last_error();
  EXPECT_GE(count, 1u);
  EXPECT_LE(count, 5u);
  size_t again = 0;
  uint32_t one[1] = {0xdeadbeef};
  if (count > 1) {
    EXPECT_EQ(vkf_generate(h.session, src, 3, &o, one, 1, &again), VKF_ERROR_BUFFER_TOO_SMALL);
    EXPECT_EQ(again, count);
    EXPECT_EQ(one[0], 0xdeadbeefu);
  }
  const uint32_t bad[] = {5, 100000};
  EXPECT_EQ(vkf_generate(h.session, bad, 2, &o, tokens, 64, &count), VKF_ERROR_INVALID_INPUT);
  EXPECT_TRUE(error_mentions("outside the source vocabulary")) << vkf_last_error();
  EXPECT_EQ(vkf_generate(h.session, src, 0, &o, tokens, 64, &count), VKF_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(vkf_generate(h.session, src, 3, &o, tokens, 64, nullptr), VKF_ERROR_INVALID_ARGUMENT);
  o.max_new_tokens = 100000;  // past the model's positions
  EXPECT_EQ(vkf_generate(h.session, src, 3, &o, tokens, 64, &count), VKF_ERROR_INVALID_INPUT);
  EXPECT_TRUE(error_mentions("max_position")) << vkf_last_error();
}

// Model facts: the date sample (torch-seq2seq with a character vocabulary) and a GPT-2
// and a Llama from the Hugging Face references (a tokenizer.json one has none beside its
// weights: has_tokenizer 0); a wrong struct_size and NULLs are statuses.
TEST(CApi, ModelInfoSizesBuffersWithoutTrialAndError) {
  Handles h;
  h.open();
  vkf_model_info info{};
  info.struct_size = sizeof info;
  ASSERT_EQ(vkf_model_info_get(h.model, &info), VKF_OK) << vkf_last_error();
  EXPECT_STREQ(info.architecture, "torch-seq2seq");
  EXPECT_EQ(info.decoder_only, 0);
  EXPECT_EQ(info.has_tokenizer, 1);
  const vkf::ModelConfig c = vkf::ModelConfig::from_file(kDates + "/config.json");
  EXPECT_EQ(info.source_vocab_size, c.src_vocab_size);
  EXPECT_EQ(info.target_vocab_size, c.tgt_vocab_size);
  EXPECT_EQ(info.max_positions, c.max_position);
  EXPECT_EQ(info.eos_id, c.eos_id);
  EXPECT_EQ(info.bos_id, c.bos_id);
  EXPECT_EQ(info.d_model, c.d_model);
  EXPECT_EQ(info.heads, c.nhead);
  EXPECT_EQ(info.kv_heads, c.nhead);
  EXPECT_EQ(info.default_num_beams, 1u);

  for (const auto& [dir, arch, heads, kv_heads] :
       {std::tuple{std::string(VKF_SOURCE_DIR) + "/tests/hf/gpt2/lm", "gpt2", 4u, 4u},
        std::tuple{std::string(VKF_SOURCE_DIR) + "/tests/hf/llama/gqa", "llama", 4u, 2u}}) {
    vkf_model* m = nullptr;
    ASSERT_EQ(vkf_model_load(h.context, dir.c_str(), VKF_PRECISION_FP32, &m), VKF_OK) << vkf_last_error();
    vkf_model_info i{};
    i.struct_size = sizeof i;
    ASSERT_EQ(vkf_model_info_get(m, &i), VKF_OK) << vkf_last_error();
    EXPECT_STREQ(i.architecture, arch);
    EXPECT_EQ(i.decoder_only, 1);
    EXPECT_EQ(i.heads, heads);
    EXPECT_EQ(i.kv_heads, kv_heads);
    EXPECT_EQ(i.max_positions, 64u);
    EXPECT_EQ(i.has_tokenizer, std::string(arch) == "gpt2" ? 1 : 0);
    vkf_model_free(m);
  }
  vkf_model_info wrong{};
  wrong.struct_size = sizeof wrong - 4;
  EXPECT_EQ(vkf_model_info_get(h.model, &wrong), VKF_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(error_mentions("struct_size")) << vkf_last_error();
  EXPECT_EQ(vkf_model_info_get(nullptr, &info), VKF_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(vkf_model_info_get(h.model, nullptr), VKF_ERROR_INVALID_ARGUMENT);
}

// Tokens in and out with the model's tokenizer: the ids vkf_generate takes and the text
// of those it returns, the buffer sized by a first call, every error a status.
TEST(CApi, TokenizeAndDetokenizeWithTheModelsTokenizer) {
  Handles h;
  h.open();
  const char* text = "3/3/98";
  size_t count = 0;
  EXPECT_EQ(vkf_tokenize(h.model, text, nullptr, 0, &count), VKF_ERROR_BUFFER_TOO_SMALL);
  ASSERT_GT(count, 0u);
  std::vector<uint32_t> ids(count, 0xdeadbeef);
  ASSERT_EQ(vkf_tokenize(h.model, text, ids.data(), ids.size(), &count), VKF_OK) << vkf_last_error();
  EXPECT_EQ(ids, vkf::Tokenizer::for_model(kDates)->encode(text));
  size_t needed = 0;
  EXPECT_EQ(vkf_detokenize(h.model, ids.data(), ids.size(), nullptr, 0, &needed), VKF_ERROR_BUFFER_TOO_SMALL);
  std::string back(needed, '\xff');
  ASSERT_EQ(vkf_detokenize(h.model, ids.data(), ids.size(), back.data(), back.size(), &needed), VKF_OK);
  EXPECT_STREQ(back.c_str(), vkf::Tokenizer::for_model(kDates)->decode(ids).c_str());

  // A generation's tokens as text, as vkf_translate would give them.
  uint32_t out[64];
  size_t n = 0;
  vkf_generate_options o = vkf_generate_options_default();
  o.max_new_tokens = 12;
  ASSERT_EQ(vkf_generate(h.session, ids.data(), ids.size(), &o, out, 64, &n), VKF_OK) << vkf_last_error();
  char translated[128];
  ASSERT_EQ(vkf_translate(h.session, text, &o, translated, sizeof translated, &needed), VKF_OK) << vkf_last_error();
  char decoded[128];
  ASSERT_EQ(vkf_detokenize(h.model, out, n, decoded, sizeof decoded, &needed), VKF_OK) << vkf_last_error();
  EXPECT_STREQ(decoded, translated);

  EXPECT_EQ(vkf_tokenize(h.model, "\xff\xfe", ids.data(), ids.size(), &count), VKF_ERROR_INVALID_INPUT);
  EXPECT_TRUE(error_mentions("UTF-8")) << vkf_last_error();
  EXPECT_EQ(vkf_tokenize(nullptr, text, ids.data(), ids.size(), &count), VKF_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(vkf_tokenize(h.model, nullptr, ids.data(), ids.size(), &count), VKF_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(vkf_tokenize(h.model, text, ids.data(), ids.size(), nullptr), VKF_ERROR_INVALID_ARGUMENT);
  const uint32_t outside[] = {1, 1u << 30};
  EXPECT_EQ(vkf_detokenize(h.model, outside, 2, decoded, sizeof decoded, &needed), VKF_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(error_mentions("ids[1]")) << vkf_last_error();
  EXPECT_EQ(vkf_detokenize(h.model, nullptr, 2, decoded, sizeof decoded, &needed), VKF_ERROR_INVALID_ARGUMENT);

  // A model without a tokenizer says so: ids only.
  vkf_model* llama = nullptr;
  const std::string dir = std::string(VKF_SOURCE_DIR) + "/tests/hf/llama/gqa";
  ASSERT_EQ(vkf_model_load(h.context, dir.c_str(), VKF_PRECISION_FP32, &llama), VKF_OK) << vkf_last_error();
  EXPECT_EQ(vkf_tokenize(llama, text, ids.data(), ids.size(), &count), VKF_ERROR_FAILED);
  EXPECT_TRUE(error_mentions("has no tokenizer")) << vkf_last_error();
  EXPECT_EQ(vkf_detokenize(llama, ids.data(), 1, decoded, sizeof decoded, &needed), VKF_ERROR_FAILED);
  vkf_model_free(llama);
}

// Three sources in one call: each output as vkf_generate gives it alone, in order; a
// decoder-only model's prompts too (left-padded into one batch); sizes and errors.
TEST(CApi, GenerateABatchOfSources) {
  for (const std::string dir : {kDates, std::string(VKF_SOURCE_DIR) + "/tests/hf/gpt2/lm"}) {
    SCOPED_TRACE(dir);
    Handles h;
    h.open(dir);
    const std::vector<std::vector<uint32_t>> src = {{5, 6, 7}, {9}, {8, 12, 14, 5, 6, 7}};
    vkf_generate_options o = vkf_generate_options_default();
    o.max_new_tokens = 6;
    std::vector<uint32_t> alone;
    std::vector<size_t> alone_counts;
    for (const auto& s : src) {
      uint32_t t[64];
      size_t n = 0;
      ASSERT_EQ(vkf_generate(h.session, s.data(), s.size(), &o, t, 64, &n), VKF_OK) << vkf_last_error();
      alone.insert(alone.end(), t, t + n);
      alone_counts.push_back(n);
    }
    const uint32_t* ptrs[] = {src[0].data(), src[1].data(), src[2].data()};
    const size_t lengths[] = {3, 1, 6};
    size_t counts[3] = {}, total = 0;
    EXPECT_EQ(vkf_generate_batch(h.session, ptrs, lengths, 3, &o, nullptr, 0, counts, &total), VKF_ERROR_BUFFER_TOO_SMALL);
    EXPECT_EQ(total, alone.size());
    std::vector<uint32_t> tokens(total);
    ASSERT_EQ(vkf_generate_batch(h.session, ptrs, lengths, 3, &o, tokens.data(), tokens.size(), counts, &total), VKF_OK)
        << vkf_last_error();
    EXPECT_EQ(tokens, alone);
    EXPECT_EQ(std::vector<size_t>(counts, counts + 3), alone_counts);
    const size_t empty_lengths[] = {3, 0, 6};
    EXPECT_EQ(vkf_generate_batch(h.session, ptrs, empty_lengths, 3, &o, tokens.data(), tokens.size(), counts, &total),
              VKF_ERROR_INVALID_ARGUMENT);
    EXPECT_TRUE(error_mentions("source 1 is empty")) << vkf_last_error();
    EXPECT_EQ(vkf_generate_batch(h.session, ptrs, lengths, 0, &o, tokens.data(), tokens.size(), counts, &total),
              VKF_ERROR_INVALID_ARGUMENT);
    EXPECT_EQ(vkf_generate_batch(h.session, ptrs, lengths, 3, &o, tokens.data(), tokens.size(), nullptr, &total),
              VKF_ERROR_INVALID_ARGUMENT);
    const uint32_t bad[] = {5, 1u << 30};
    const uint32_t* with_bad[] = {src[0].data(), bad};
    const size_t bad_lengths[] = {3, 2};
    EXPECT_EQ(vkf_generate_batch(h.session, with_bad, bad_lengths, 2, &o, tokens.data(), tokens.size(), counts, &total),
              VKF_ERROR_INVALID_INPUT);
  }
}

// Words as they come: the per-token callback sees every token of every output in order,
// with pieces of whole characters that add up to (a prefix of) the decoded text; a
// nonzero return ends that output; from a job, it runs on the job's thread.
// What on_token saw: each call's output and token, the pieces of text per output, and
// whether an output's VKF_TOKEN_END call came last.
struct Streamed {
  std::vector<std::pair<size_t, uint32_t>> tokens;  // VKF_TOKEN_END calls left out
  std::map<size_t, std::string> text;
  std::map<size_t, int> ends;                       // VKF_TOKEN_END calls per output
  bool token_after_end = false;
  size_t stop_after = 0;  // 0: never
  std::thread::id thread;
  static int on_token(void* user, size_t output, uint32_t token, const char* piece, size_t length) {
    auto* s = static_cast<Streamed*>(user);
    s->thread = std::this_thread::get_id();
    if (piece) {
      EXPECT_EQ(std::strlen(piece), length);
      s->text[output] += piece;
    }
    if (token == VKF_TOKEN_END) {
      ++s->ends[output];
      return 0;
    }
    if (s->ends.count(output)) s->token_after_end = true;
    s->tokens.push_back({output, token});
    return s->stop_after && s->tokens.size() >= s->stop_after ? 1 : 0;
  }
  // Output 0 streamed whole: its tokens in order, one end call after them, and its
  // pieces adding up to vkf_detokenize of the tokens.
  void expect_whole(vkf_model* model, const uint32_t* tokens, size_t count) const {
    ASSERT_EQ(this->tokens.size(), count);
    for (size_t i = 0; i < count; ++i) EXPECT_EQ(this->tokens[i], std::make_pair(size_t(0), tokens[i])) << i;
    EXPECT_EQ(ends.count(0) ? ends.at(0) : 0, 1) << "one VKF_TOKEN_END call per output";
    EXPECT_FALSE(token_after_end) << "a token came after the output's end";
    char want[1024];
    size_t needed = 0;
    ASSERT_EQ(vkf_detokenize(model, tokens, count, want, sizeof want, &needed), VKF_OK) << vkf_last_error();
    EXPECT_EQ(text.count(0) ? text.at(0) : "", std::string(want)) << "the pieces are not the whole text";
  }
};

// on_token streams every token, then ends each output with VKF_TOKEN_END and the rest of
// its text: the pieces add up to vkf_detokenize of the output (the last word included),
// greedy, sampled and from a job's thread; a nonzero return ends the output.
TEST(CApi, PerTokenCallbackStreamsWholeCharactersToTheLastWordAndCanEndAnOutput) {
  Handles h;
  h.open(std::string(VKF_SOURCE_DIR) + "/tests/hf/gpt2/lm");
  const uint32_t prompt[] = {5, 17, 9};
  uint32_t tokens[128];
  size_t count = 0;
  for (float temperature : {0.0f, 0.8f}) {
    SCOPED_TRACE(temperature);
    Streamed st;
    vkf_generate_options o = vkf_generate_options_default();
    o.temperature = temperature;
    o.seed = 7;
    o.on_token = &Streamed::on_token;
    o.on_token_user = &st;
    ASSERT_EQ(vkf_generate(h.session, prompt, 3, &o, tokens, 128, &count), VKF_OK) << vkf_last_error();
    ASSERT_GT(count, 0u);
    st.expect_whole(h.model, tokens, count);

    Streamed from_job;
    o.on_token_user = &from_job;
    vkf_job* job = nullptr;
    ASSERT_EQ(vkf_generate_start(h.session, prompt, 3, &o, &job), VKF_OK) << vkf_last_error();
    ASSERT_EQ(vkf_job_wait(job, 60000), VKF_OK) << vkf_last_error();
    size_t n = 0;
    ASSERT_EQ(vkf_job_tokens(job, tokens, 128, &n), VKF_OK);
    from_job.expect_whole(h.model, tokens, n);
    EXPECT_NE(from_job.thread, std::this_thread::get_id());
    vkf_job_free(job);
  }

  Streamed ended;
  ended.stop_after = 3;
  vkf_generate_options o = vkf_generate_options_default();
  o.on_token = &Streamed::on_token;
  o.on_token_user = &ended;
  ASSERT_EQ(vkf_generate(h.session, prompt, 3, &o, tokens, 128, &count), VKF_OK) << vkf_last_error();
  EXPECT_EQ(count, 3u);
  ended.expect_whole(h.model, tokens, count);

  // Text in, text out: the streamed pieces are the translation's text.
  Streamed text;
  o = vkf_generate_options_default();
  o.on_token = &Streamed::on_token;
  o.on_token_user = &text;
  char out[1024];
  ASSERT_EQ(vkf_translate(h.session, "The date is", &o, out, sizeof out, nullptr), VKF_OK) << vkf_last_error();
  EXPECT_EQ(text.text[0], std::string(out));
  EXPECT_EQ(text.ends[0], 1);
}

// A batch: each output gets its own end call, after its own tokens.
TEST(CApi, EveryOutputOfABatchEndsWithItsRest) {
  Handles h;
  h.open(std::string(VKF_SOURCE_DIR) + "/tests/hf/gpt2/lm");
  const uint32_t a[] = {5, 17, 9}, b[] = {42};
  const uint32_t* sources[] = {a, b};
  const size_t lengths[] = {3, 1};
  Streamed st;
  vkf_generate_options o = vkf_generate_options_default();
  o.on_token = &Streamed::on_token;
  o.on_token_user = &st;
  uint32_t tokens[256];
  size_t counts[2], total = 0;
  ASSERT_EQ(vkf_generate_batch(h.session, sources, lengths, 2, &o, tokens, 256, counts, &total), VKF_OK)
      << vkf_last_error();
  EXPECT_EQ(st.ends[0], 1);
  EXPECT_EQ(st.ends[1], 1);
  EXPECT_FALSE(st.token_after_end);
  const uint32_t* out = tokens;
  for (size_t i = 0; i < 2; ++i) {
    char want[1024];
    ASSERT_EQ(vkf_detokenize(h.model, out, counts[i], want, sizeof want, nullptr), VKF_OK);
    EXPECT_EQ(st.text[i], std::string(want)) << "output " << i;
    out += counts[i];
  }
}

// A model keeps its context alive and a session its model: any free order works.
TEST(CApi, HandlesMayBeFreedInAnyOrder) {
  Handles h;
  h.open();
  vkf_context_free(h.context);
  h.context = nullptr;
  vkf_model_free(h.model);
  h.model = nullptr;
  char out[64];
  ASSERT_EQ(vkf_translate(h.session, "25.12.1969", nullptr, out, sizeof out, nullptr), VKF_OK) << vkf_last_error();
  EXPECT_STREQ(out, "1969-12-25");
}

// On the application's own device (vkf_context_create_borrowed): the translation runs,
// every submission goes through the app's queue lock, and nothing lent is destroyed
// (the app destroys its device afterwards with no validation message).
TEST(CApi, BorrowedDeviceFromC) {
  vkf::test::AppVulkan app(true);
  ASSERT_TRUE(app.device);
  struct Lock {
    int calls = 0, held = 0;
  } lock;
  vkf_borrowed_vulkan b = lend(app);
  b.lock_queue = [](void* u) {
    auto* l = static_cast<Lock*>(u);
    l->calls++;
    l->held++;
  };
  b.unlock_queue = [](void* u) { static_cast<Lock*>(u)->held--; };
  b.user = &lock;
  std::string device_line;  // vkformer's messages reach the app's callback
  b.log = [](void* user, vkf_log_level level, const char* message) {
    if (level == VKF_LOG_INFO && std::strstr(message, "borrowed")) *static_cast<std::string*>(user) = message;
  };
  b.log_user = &device_line;
  {
    Handles h;
    ASSERT_EQ(vkf_context_create_borrowed(&b, &h.context), VKF_OK) << vkf_last_error();
    EXPECT_NE(device_line.find("using device"), std::string::npos) << device_line;
    ASSERT_EQ(vkf_model_load(h.context, kDates.c_str(), VKF_PRECISION_FP16, &h.model), VKF_OK) << vkf_last_error();
    ASSERT_EQ(vkf_session_create(h.model, &h.session), VKF_OK) << vkf_last_error();
    char out[64];
    ASSERT_EQ(vkf_translate(h.session, "Tuesday, July 4, 2023", nullptr, out, sizeof out, nullptr), VKF_OK)
        << vkf_last_error();
    EXPECT_STREQ(out, "2023-07-04");
  }
  EXPECT_GT(lock.calls, 0);
  EXPECT_EQ(lock.held, 0);
  app.destroy();
  EXPECT_EQ(app.messages.load(), 0) << "validation: " << app.last_message;

  vkf_context* c = nullptr;
  EXPECT_EQ(vkf_context_create_borrowed(nullptr, &c), VKF_ERROR_INVALID_ARGUMENT);
  b.struct_size = 3;
  EXPECT_EQ(vkf_context_create_borrowed(&b, &c), VKF_ERROR_INVALID_ARGUMENT);
  b.struct_size = sizeof b;
  b.unlock_queue = nullptr;
  EXPECT_EQ(vkf_context_create_borrowed(&b, &c), VKF_ERROR_INVALID_ARGUMENT);
  b.unlock_queue = b.lock_queue;
  b.instance = nullptr;
  EXPECT_EQ(vkf_context_create_borrowed(&b, &c), VKF_ERROR_FAILED);
  EXPECT_TRUE(error_mentions("instance is null")) << vkf_last_error();
}

// A device that lacks what a request needs: fp16 weights on a device the app created
// without 16-bit storage fail with a message naming the feature; fp32 still works.
TEST(CApi, ADeviceWithoutARequiredFeatureIsAClearError) {
  vkf::test::AppVulkan app(false);
  ASSERT_TRUE(app.device);
  vkf_borrowed_vulkan b = lend(app);
  {
    Handles h;
    ASSERT_EQ(vkf_context_create_borrowed(&b, &h.context), VKF_OK) << vkf_last_error();
    EXPECT_EQ(vkf_model_load(h.context, kDates.c_str(), VKF_PRECISION_FP16, &h.model), VKF_ERROR_UNSUPPORTED);
    EXPECT_TRUE(error_mentions("16-bit storage")) << vkf_last_error();
    EXPECT_EQ(h.model, nullptr);
    ASSERT_EQ(vkf_model_load(h.context, kDates.c_str(), VKF_PRECISION_FP32, &h.model), VKF_OK) << vkf_last_error();
    ASSERT_EQ(vkf_session_create(h.model, &h.session), VKF_OK) << vkf_last_error();
    char out[64];
    ASSERT_EQ(vkf_translate(h.session, "3/3/98", nullptr, out, sizeof out, nullptr), VKF_OK) << vkf_last_error();
    EXPECT_STREQ(out, "1998-03-03");
  }
  app.destroy();
  EXPECT_EQ(app.messages.load(), 0) << "validation: " << app.last_message;
}

// A frame loop's use: start a job, poll it each frame, take the result. The calls made
// on this thread never wait for the GPU (the job's thread does).
TEST(CApi, JobsRunWithoutBlockingTheCaller) {
  Handles h;
  h.open();
  const uint64_t waits = vkf_blocking_waits_on_this_thread();
  vkf_job* job = nullptr;
  ASSERT_EQ(vkf_translate_start(h.session, "25.12.1969", nullptr, &job), VKF_OK) << vkf_last_error();
  vkf_job* second = nullptr;
  EXPECT_EQ(vkf_translate_start(h.session, "1/1/01", nullptr, &second), VKF_ERROR_BUSY);
  EXPECT_TRUE(error_mentions("already running a job"));
  char out[64];
  EXPECT_EQ(vkf_translate(h.session, "1/1/01", nullptr, out, sizeof out, nullptr), VKF_ERROR_BUSY);
  int frames = 0;
  vkf_status s;
  while ((s = vkf_job_poll(job)) == VKF_PENDING) {  // a frame's worth of other work
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    ++frames;
  }
  ASSERT_EQ(s, VKF_OK) << vkf_last_error();
  ASSERT_EQ(vkf_job_text(job, out, sizeof out, nullptr), VKF_OK) << vkf_last_error();
  EXPECT_STREQ(out, "1969-12-25");
  size_t count = 0;
  EXPECT_EQ(vkf_job_tokens(job, nullptr, 0, &count), VKF_ERROR_INVALID_ARGUMENT);  // a text job
  EXPECT_EQ(vkf_blocking_waits_on_this_thread(), waits) << "a frame call waited for the GPU";
  vkf_job_free(job);
  // The session is free again.
  ASSERT_EQ(vkf_translate(h.session, "1/1/01", nullptr, out, sizeof out, nullptr), VKF_OK) << vkf_last_error();
  EXPECT_GT(vkf_blocking_waits_on_this_thread(), waits) << "the blocking call should have waited here";

  const uint32_t src[] = {5, 6, 7};
  ASSERT_EQ(vkf_generate_start(h.session, src, 3, nullptr, &job), VKF_OK) << vkf_last_error();
  ASSERT_EQ(vkf_job_wait(job, 60000), VKF_OK) << vkf_last_error();
  uint32_t tokens[64];
  ASSERT_EQ(vkf_job_tokens(job, tokens, 64, &count), VKF_OK) << vkf_last_error();
  EXPECT_GE(count, 1u);
  vkf_job_free(job);
  EXPECT_EQ(vkf_job_poll(nullptr), VKF_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(vkf_job_cancel(nullptr), VKF_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(vkf_translate_start(h.session, "x", nullptr, nullptr), VKF_ERROR_INVALID_ARGUMENT);
  vkf_job_free(nullptr);
}

// Cancelled from another thread, a long generation stops at its next step.
TEST(CApi, JobsCanBeCancelled) {
  Handles h;
  h.open();
  const uint32_t src[] = {5, 6, 7, 8, 9};
  vkf_generate_options o = vkf_generate_options_default();
  o.temperature = 50.0f;  // nearly uniform sampling: EOS is rare, the generation long
  o.seed = 1;
  vkf_job* job = nullptr;
  ASSERT_EQ(vkf_generate_start(h.session, src, 5, &o, &job), VKF_OK) << vkf_last_error();
  std::thread([job] { vkf_job_cancel(job); }).join();
  EXPECT_EQ(vkf_job_wait(job, 60000), VKF_ERROR_CANCELLED);
  EXPECT_TRUE(error_mentions("cancelled")) << vkf_last_error();
  size_t count = 0;
  EXPECT_EQ(vkf_job_tokens(job, nullptr, 0, &count), VKF_ERROR_CANCELLED);
  vkf_job_free(job);
  // Not cancelled, the same generation runs long: the cancel above had work to stop.
  ASSERT_EQ(vkf_generate_start(h.session, src, 5, &o, &job), VKF_OK);
  ASSERT_EQ(vkf_job_wait(job, 60000), VKF_OK) << vkf_last_error();
  uint32_t tokens[256];
  ASSERT_EQ(vkf_job_tokens(job, tokens, 256, &count), VKF_OK);
  EXPECT_GT(count, 8u);
  vkf_job_free(job);
  // A session freed with a job still running ends the job; the job handle stays valid.
  ASSERT_EQ(vkf_generate_start(h.session, src, 5, &o, &job), VKF_OK);
  vkf_session_free(h.session);
  h.session = nullptr;
  EXPECT_NE(vkf_job_poll(job), VKF_PENDING);
  vkf_job_free(job);
}

// A game's budgets: memory reported and capped, pipelines compiled at load time, the
// GPU time per submit settable.
TEST(CApi, BudgetsMemoryWarmupAndSubmitTime) {
  Handles h;
  h.open();
  uint64_t allocated = 0, peak = 0;
  ASSERT_EQ(vkf_context_memory(h.context, &allocated, &peak), VKF_OK);
  EXPECT_GT(allocated, 1000000u);  // the weights
  EXPECT_GE(peak, allocated);
  EXPECT_EQ(vkf_context_memory(nullptr, &allocated, &peak), VKF_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(vkf_session_warmup(h.session), VKF_OK) << vkf_last_error();
  EXPECT_EQ(vkf_session_warmup(nullptr), VKF_ERROR_INVALID_ARGUMENT);
  vkf_generate_options o = vkf_generate_options_default();
  EXPECT_EQ(o.submit_budget_ms, 2.0f);
  o.submit_budget_ms = 0;  // no budget: many steps per submit
  char out[64];
  ASSERT_EQ(vkf_translate(h.session, "3/3/98", &o, out, sizeof out, nullptr), VKF_OK) << vkf_last_error();
  EXPECT_STREQ(out, "1998-03-03");
  o.submit_budget_ms = -1;
  EXPECT_EQ(vkf_translate(h.session, "3/3/98", &o, out, sizeof out, nullptr), VKF_ERROR_INVALID_ARGUMENT);

  vkf_context_options co = vkf_context_options_default();
  co.memory_limit = 1 << 20;  // less than the model
  vkf_context* small = nullptr;
  ASSERT_EQ(vkf_context_create(&co, &small), VKF_OK) << vkf_last_error();
  vkf_model* m = nullptr;
  EXPECT_EQ(vkf_model_load(small, kDates.c_str(), VKF_PRECISION_FP32, &m), VKF_ERROR_OUT_OF_MEMORY);
  EXPECT_TRUE(error_mentions("limit of 1048576 bytes")) << vkf_last_error();
  EXPECT_TRUE(error_mentions("memory_limit of vkf_context_options")) << vkf_last_error();  // the C field, for C callers
  vkf_context_free(small);
}

// A loading screen's warm-up that tunes the GEMM variants once per device, within a
// budget: the tuning file appears in the cache directory and a second warm-up leaves
// it alone; bad options are refused by name; without a disk cache it warns and warms up.
TEST(CApi, WarmupTunesTheGemmVariantsOnceWithinItsBudget) {
  const fs::path dir = fs::temp_directory_path() / ("vkf_capi_tune_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  Messages messages;
  const std::string dir_text = dir.string();
  vkf_context_options co = logged_options(messages, dir_text);
  auto tuning_files = [&] {
    std::vector<fs::path> found;
    for (auto& e : fs::directory_iterator(dir))
      if (e.path().filename().string().rfind("gemm-tuning-", 0) == 0) found.push_back(e.path());
    return found;
  };
  {
    Handles h;
    ASSERT_EQ(vkf_context_create(&co, &h.context), VKF_OK) << vkf_last_error();
    ASSERT_EQ(vkf_model_load(h.context, kDates.c_str(), VKF_PRECISION_FP32, &h.model), VKF_OK) << vkf_last_error();
    ASSERT_EQ(vkf_session_create(h.model, &h.session), VKF_OK) << vkf_last_error();
    vkf_warmup_options w = vkf_warmup_options_default();
    EXPECT_EQ(w.struct_size, sizeof w);
    EXPECT_EQ(w.tune_budget_s, 0.0);
    w.tune_budget_s = 3;
    ASSERT_EQ(vkf_session_warmup_with(h.session, &w), VKF_OK) << vkf_last_error();
    const auto files = tuning_files();
    ASSERT_EQ(files.size(), 1u) << "no tuning file in " << dir;
    const auto written = fs::last_write_time(files[0]);
    ASSERT_EQ(vkf_session_warmup_with(h.session, &w), VKF_OK) << vkf_last_error();  // tuned already: no second tune
    EXPECT_EQ(fs::last_write_time(files[0]), written);
    EXPECT_EQ(vkf_session_warmup_with(h.session, nullptr), VKF_OK) << vkf_last_error();  // the defaults
    char out[64];
    ASSERT_EQ(vkf_translate(h.session, "3/3/98", nullptr, out, sizeof out, nullptr), VKF_OK) << vkf_last_error();
    EXPECT_STREQ(out, "1998-03-03");

    EXPECT_EQ(vkf_session_warmup_with(nullptr, &w), VKF_ERROR_INVALID_ARGUMENT);
    vkf_warmup_options bad = w;
    bad.struct_size = 4;
    EXPECT_EQ(vkf_session_warmup_with(h.session, &bad), VKF_ERROR_INVALID_ARGUMENT);
    EXPECT_TRUE(error_mentions("struct_size")) << vkf_last_error();
    for (double budget : {-1.0, std::nan(""), 1e9}) {
      bad = w;
      bad.tune_budget_s = budget;
      EXPECT_EQ(vkf_session_warmup_with(h.session, &bad), VKF_ERROR_INVALID_ARGUMENT) << budget;
      EXPECT_TRUE(error_mentions("tune_budget_s")) << vkf_last_error();
    }
  }
  {
    std::lock_guard lock(messages.mutex);
    for (auto& m : messages.text) EXPECT_LT(m[0], '2') << "a warning or error: " << m;
    messages.text.clear();
  }
  // No disk cache: warmed up, not tuned, and the app is told why.
  co.cache_dir = "off";
  {
    Handles h;
    ASSERT_EQ(vkf_context_create(&co, &h.context), VKF_OK) << vkf_last_error();
    ASSERT_EQ(vkf_model_load(h.context, kDates.c_str(), VKF_PRECISION_FP32, &h.model), VKF_OK) << vkf_last_error();
    ASSERT_EQ(vkf_session_create(h.model, &h.session), VKF_OK) << vkf_last_error();
    vkf_warmup_options w = vkf_warmup_options_default();
    w.tune_budget_s = 3;
    ASSERT_EQ(vkf_session_warmup_with(h.session, &w), VKF_OK) << vkf_last_error();
  }
  {
    std::lock_guard lock(messages.mutex);
    bool said = false;
    for (auto& m : messages.text) said |= m.find("not tuned") != std::string::npos;
    EXPECT_TRUE(said) << "no warning that the variants were not tuned";
  }
  fs::remove_all(dir);
}

// The device heap's budget (VK_EXT_memory_budget on lavapipe), a shippable cache
// directory filled by warm-up, and vkformer's messages through the app's callback.
TEST(CApi, HeapBudgetCacheDirectoryAndLogCallback) {
  const fs::path dir = fs::temp_directory_path() / ("vkf_capi_cache_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  Messages messages;
  EXPECT_EQ(vkf_context_options_default().within_heap_budget, 1);
  const std::string dir_text = dir.string();
  vkf_context_options co = logged_options(messages, dir_text);
  {
    Handles h;
    ASSERT_EQ(vkf_context_create(&co, &h.context), VKF_OK) << vkf_last_error();
    ASSERT_EQ(vkf_model_load(h.context, kDates.c_str(), VKF_PRECISION_FP32, &h.model), VKF_OK) << vkf_last_error();
    ASSERT_EQ(vkf_session_create(h.model, &h.session), VKF_OK) << vkf_last_error();
    uint64_t heap = 0, budget = 0, usage = 0;
    ASSERT_EQ(vkf_context_heap_budget(h.context, &heap, &budget, &usage), VKF_OK) << vkf_last_error();
    EXPECT_GT(heap, 0u);
    EXPECT_GT(budget, 0u);
    EXPECT_LE(budget, heap);
    EXPECT_EQ(vkf_context_heap_budget(h.context, nullptr, nullptr, nullptr), VKF_OK);
    EXPECT_EQ(vkf_context_heap_budget(nullptr, &heap, &budget, &usage), VKF_ERROR_INVALID_ARGUMENT);
    ASSERT_EQ(vkf_session_warmup(h.session), VKF_OK) << vkf_last_error();
  }  // the caches are written when the context goes
  size_t spirv = 0, pipeline_caches = 0;
  for (auto& e : fs::recursive_directory_iterator(dir)) {
    spirv += e.path().extension() == ".spv";
    pipeline_caches += e.path().filename().string().find("pipeline") != std::string::npos;
  }
  EXPECT_GT(spirv, 0u) << "warm-up filled no SPIR-V cache in " << dir;
  EXPECT_GT(pipeline_caches, 0u) << "no pipeline cache file in " << dir;
  {
    std::lock_guard lock(messages.mutex);
    bool device_line = false;
    for (auto& m : messages.text) {
      device_line |= m.rfind("1 using device", 0) == 0;  // VKF_LOG_INFO
      EXPECT_LT(m[0], '2') << "a warning or error (a validation message?): " << m;
    }
    EXPECT_TRUE(device_line) << "the callback got no 'using device' message (" << messages.text.size() << " messages)";
  }
  fs::remove_all(dir);
}

TEST(CApi, ScoreGivesTeacherForcedLogits) {
  Handles h;
  h.open();
  const uint32_t src[] = {5, 6, 7, 8};
  uint32_t tokens[16];
  size_t n = 0;
  vkf_generate_options o = vkf_generate_options_default();
  o.max_new_tokens = 6;
  ASSERT_EQ(vkf_generate(h.session, src, 4, &o, tokens, 16, &n), VKF_OK) << vkf_last_error();
  ASSERT_GE(n, 2u);
  // BOS, then the greedy tokens: the argmax of row i must be token i + 1.
  std::vector<uint32_t> target = {1};
  target.insert(target.end(), tokens, tokens + n - 1);
  size_t count = 0;
  EXPECT_EQ(vkf_score(h.session, src, 4, target.data(), target.size(), nullptr, 0, &count), VKF_ERROR_BUFFER_TOO_SMALL);
  ASSERT_GT(count, 0u);
  ASSERT_EQ(count % target.size(), 0u);
  const size_t vocabulary = count / target.size();
  std::vector<float> logits(count, std::nanf(""));
  ASSERT_EQ(vkf_score(h.session, src, 4, target.data(), target.size(), logits.data(), logits.size(), &count), VKF_OK)
      << vkf_last_error();
  for (size_t i = 0; i < target.size(); ++i) {
    const float* row = logits.data() + i * vocabulary;
    for (size_t v = 0; v < vocabulary; ++v) ASSERT_TRUE(std::isfinite(row[v])) << "row " << i << " id " << v;
    EXPECT_EQ(size_t(std::max_element(row, row + vocabulary) - row), tokens[i]) << "row " << i;
  }
  EXPECT_EQ(vkf_score(nullptr, src, 4, target.data(), 1, logits.data(), logits.size(), &count), VKF_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(vkf_score(h.session, src, 4, nullptr, 0, logits.data(), logits.size(), &count), VKF_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(error_mentions("target is empty"));
  EXPECT_EQ(vkf_score(h.session, src, 4, target.data(), 1, logits.data(), logits.size(), nullptr), VKF_ERROR_INVALID_ARGUMENT);
  const uint32_t bad_target[] = {1, 1u << 30};
  EXPECT_EQ(vkf_score(h.session, src, 4, bad_target, 2, logits.data(), logits.size(), &count), VKF_ERROR_INVALID_INPUT);
  EXPECT_TRUE(error_mentions("vocabulary")) << vkf_last_error();
}

TEST(CApi, SessionStatsCountTheLastGeneration) {
  Handles h;
  h.open();
  vkf_generate_stats st{};
  EXPECT_EQ(vkf_session_stats(h.session, &st), VKF_ERROR_INVALID_ARGUMENT);  // struct_size unset
  EXPECT_TRUE(error_mentions("struct_size"));
  st.struct_size = sizeof st;
  char out[64];
  ASSERT_EQ(vkf_translate(h.session, "3/3/98", nullptr, out, sizeof out, nullptr), VKF_OK) << vkf_last_error();
  ASSERT_EQ(vkf_session_stats(h.session, &st), VKF_OK) << vkf_last_error();
  EXPECT_EQ(st.tokens, std::strlen("1998-03-03") + 1);  // EOS included
  EXPECT_GT(st.encode_ms, 0);
  EXPECT_GT(st.decode_ms, 0);
  EXPECT_GE(st.submits, 2u);
  EXPECT_GT(st.dispatches, st.submits);
  EXPECT_GT(st.dispatches_per_decoder_layer, 0);
  EXPECT_EQ(vkf_session_stats(nullptr, &st), VKF_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(vkf_session_stats(h.session, nullptr), VKF_ERROR_INVALID_ARGUMENT);
}

TEST(CApi, ForecasterFromC) {
  const std::string dir = std::string(VKF_SOURCE_DIR) + "/samples/forecast";
  vkf_context* c = nullptr;
  ASSERT_EQ(vkf_context_create(nullptr, &c), VKF_OK) << vkf_last_error();
  vkf_forecaster* f = nullptr;
  EXPECT_EQ(vkf_forecaster_load(c, kDates.c_str(), VKF_PRECISION_FP32, &f), VKF_ERROR_FAILED);  // a seq2seq model
  EXPECT_NE(std::string(vkf_last_error()), "");
  EXPECT_EQ(f, nullptr);
  EXPECT_EQ(vkf_forecaster_load(nullptr, dir.c_str(), VKF_PRECISION_FP32, &f), VKF_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(vkf_forecaster_load(c, dir.c_str(), VKF_PRECISION_FP32, nullptr), VKF_ERROR_INVALID_ARGUMENT);
  ASSERT_EQ(vkf_forecaster_load(c, dir.c_str(), VKF_PRECISION_FP32, &f), VKF_OK) << vkf_last_error();
  uint32_t window = 0, horizon = 0;
  ASSERT_EQ(vkf_forecaster_shape(f, &window, &horizon), VKF_OK);
  EXPECT_EQ(window, 30u);
  EXPECT_EQ(horizon, 7u);
  // Two windows: a ramp and a seasonal series; the C answer is the C++ one, value for value.
  std::vector<float> windows(2 * window);
  for (uint32_t i = 0; i < window; ++i) {
    windows[i] = 10.0f + 0.5f * i;
    windows[window + i] = 20.0f + 5.0f * std::sin(2.0f * 3.14159265f * i / 7.0f);
  }
  std::vector<float> out(2 * horizon, std::nanf(""));
  EXPECT_EQ(vkf_forecast(f, windows.data(), 2, out.data(), out.size() - 1), VKF_ERROR_BUFFER_TOO_SMALL);
  EXPECT_TRUE(error_mentions("14 floats")) << vkf_last_error();
  ASSERT_EQ(vkf_forecast(f, windows.data(), 2, out.data(), out.size()), VKF_OK) << vkf_last_error();
  vkf::Context ctx;
  const auto expected = vkf::Forecaster::load(ctx, dir)->predict(windows);
  ASSERT_EQ(expected.size(), out.size());
  for (size_t i = 0; i < out.size(); ++i) EXPECT_NEAR(out[i], expected[i], 1e-5 * (1 + std::abs(expected[i]))) << i;
  EXPECT_EQ(vkf_forecast(f, nullptr, 2, out.data(), out.size()), VKF_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(vkf_forecast(f, windows.data(), 0, out.data(), out.size()), VKF_ERROR_INVALID_ARGUMENT);
  windows[3] = std::nanf("");
  EXPECT_EQ(vkf_forecast(f, windows.data(), 1, out.data(), out.size()), VKF_ERROR_FAILED);
  EXPECT_TRUE(error_mentions("finite")) << vkf_last_error();
  vkf_forecaster_free(f);
  vkf_forecaster_free(nullptr);
  vkf_context_free(c);
}

// The documented thread rules: one context and one model shared by several threads,
// a session per thread, all translating at once.
TEST(CApi, ThreadsShareAModelWithASessionEach) {
  Handles h;
  h.open();
  const char* inputs[] = {"3/3/98", "25.12.1969", "Tuesday, July 4, 2023", "March 3, 1998"};
  const char* want[] = {"1998-03-03", "1969-12-25", "2023-07-04", "1998-03-03"};
  std::string got[4];
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      vkf_session* s = nullptr;
      if (vkf_session_create(h.model, &s) != VKF_OK) return;
      char out[64];
      for (int round = 0; round < 3; ++round)
        if (vkf_translate(s, inputs[t], nullptr, out, sizeof out, nullptr) == VKF_OK) got[t] = out;
      vkf_session_free(s);
    });
  for (auto& t : threads) t.join();
  for (int t = 0; t < 4; ++t) EXPECT_EQ(got[t], want[t]) << "thread " << t;
}

// Errors are per thread: a failure on one thread does not overwrite another's message.
TEST(CApi, LastErrorIsPerThread) {
  EXPECT_EQ(vkf_device_count(nullptr), VKF_ERROR_INVALID_ARGUMENT);
  std::string other;
  std::thread([&] {
    vkf_session_create(nullptr, nullptr);
    other = vkf_last_error();
  }).join();
  EXPECT_TRUE(error_mentions("vkf_device_count")) << vkf_last_error();
  EXPECT_NE(other.find("vkf_session_create"), std::string::npos) << other;
}

}  // namespace
