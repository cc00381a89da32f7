// The C ABI over time and the first hour from C: structs as older vkformer.h files laid
// them out (ABI 1, 2 and 3) are taken with the fields past them at their defaults; the
// defaults (NULL options, vkf_generate_options_default(), jobs) run every decoder-only
// model to the model's default length within its positions, as transformers' generate()
// does; a result that did not fit the caller's buffer is kept; and one call per status
// vkformer.h documents returns it.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstring>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "capi/handles.hpp"  // white box: the context behind a handle, to arm an injected lost device
#include "capi/open_model.hpp"
#include "vkformer/vkformer.h"
#include "vkformer/vkformer.hpp"

namespace {

using vkf::capi_test::error_mentions;
using vkf::capi_test::Handles;
using vkf::capi_test::kDates;

const std::string kHf = std::string(VKF_SOURCE_DIR) + "/tests/hf";
const std::string kGpt2 = kHf + "/gpt2/lm";
const std::string kLlama = kHf + "/llama/with_tokenizer";  // weights and a tokenizer.json

// vkf_generate_options as callers compiled them (vkformer.h at each ABI version): the
// same leading fields, fewer of them.
struct GenerateOptionsAbi1 {  // ABI 1: up to seed
  uint32_t struct_size, max_new_tokens, beam;
  float length_penalty, temperature;
  uint32_t top_k;
  float top_p;
  uint64_t seed;
};
struct GenerateOptionsAbi2 {  // ABI 2: ABI 1's, then the submit budget and the per-token callback
  GenerateOptionsAbi1 abi1;
  float submit_budget_ms;
  int (*on_token)(void*, size_t, uint32_t, const char*, size_t);
  void* on_token_user;
};
struct GenerateOptionsAbi3 {  // ABI 3: ABI 2's, then the CLI's options (ABI 4 added none)
  GenerateOptionsAbi2 abi2;
  float repetition_penalty;
  const uint32_t* eos_ids;
  size_t eos_id_count;
  const char* stop;
  uint32_t max_steps_per_submit;
};
struct ContextOptionsAbi1 {  // ABI 1: device and validation only
  uint32_t struct_size;
  const char* device;
  int validation;
};
struct GenerateStatsAbi3 {  // ABI 2 and 3: before the prompt figures
  uint32_t struct_size;
  double encode_ms, decode_ms;
  uint64_t tokens, submits, recordings, dispatches;
  double dispatches_per_decoder_layer;
};
static_assert(offsetof(GenerateOptionsAbi3, max_steps_per_submit) ==
              offsetof(vkf_generate_options, max_steps_per_submit));
static_assert(offsetof(GenerateOptionsAbi3, repetition_penalty) == offsetof(vkf_generate_options, repetition_penalty));
static_assert(offsetof(GenerateOptionsAbi2, on_token) == offsetof(vkf_generate_options, on_token));
static_assert(sizeof(GenerateOptionsAbi3) == offsetof(vkf_generate_options, no_repeat_ngram_size),
              "ABI 4 to 6 added no generation option; ABI 7 transformers' processors");
static_assert(sizeof(GenerateStatsAbi3) == offsetof(vkf_generate_stats, prompt_tokens));

std::vector<uint32_t> generate(vkf_session* s, const std::vector<uint32_t>& prompt, const void* options,
                               vkf_status expect = VKF_OK) {
  std::vector<uint32_t> tokens(256);
  size_t count = 0;
  const vkf_status st = vkf_generate(s, prompt.data(), prompt.size(), static_cast<const vkf_generate_options*>(options),
                                     tokens.data(), tokens.size(), &count);
  EXPECT_EQ(st, expect) << vkf_last_error();
  tokens.resize(st == VKF_OK ? count : 0);
  return tokens;
}

const nlohmann::json& llama_references() {
  static const nlohmann::json j = nlohmann::json::parse(std::ifstream(kHf + "/llama/with_tokenizer_references.json"));
  return j;
}

// The defaults run a decoder-only model to its default length (64 new tokens) cut to the
// positions the prompt leaves: transformers' generate(max_new_tokens=65 - P), for NULL
// options, vkf_generate_options_default(), a job and text through vkf_translate.
TEST(CAbi, DefaultOptionsRunALlamaAsTransformersDoes) {
  Handles h;
  h.open(kLlama);
  vkf_model_info info{};
  info.struct_size = sizeof info;
  ASSERT_EQ(vkf_model_info_get(h.model, &info), VKF_OK) << vkf_last_error();
  ASSERT_EQ(info.has_tokenizer, 1) << "the reference has a tokenizer";
  const vkf_generate_options defaults = vkf_generate_options_default();
  for (const auto& p : llama_references()["prompts"]) {
    const std::string text = p["text"];
    SCOPED_TRACE(text);
    const auto ids = p["ids"].get<std::vector<uint32_t>>();
    const auto want = p["greedy"].get<std::vector<uint32_t>>();
    uint32_t got_ids[64];
    size_t n = 0;
    ASSERT_EQ(vkf_tokenize(h.model, text.c_str(), got_ids, 64, &n), VKF_OK) << vkf_last_error();
    EXPECT_EQ(std::vector<uint32_t>(got_ids, got_ids + n), ids);
    EXPECT_EQ(generate(h.session, ids, nullptr), want);
    EXPECT_EQ(generate(h.session, ids, &defaults), want);
    vkf_job* job = nullptr;
    ASSERT_EQ(vkf_generate_start(h.session, ids.data(), ids.size(), nullptr, &job), VKF_OK) << vkf_last_error();
    ASSERT_EQ(vkf_job_wait(job, 60000), VKF_OK) << vkf_last_error();
    std::vector<uint32_t> from_job(256);
    ASSERT_EQ(vkf_job_tokens(job, from_job.data(), from_job.size(), &n), VKF_OK) << vkf_last_error();
    EXPECT_EQ(std::vector<uint32_t>(from_job.begin(), from_job.begin() + long(n)), want);
    vkf_job_free(job);
    char out[1024];
    ASSERT_EQ(vkf_translate(h.session, text.c_str(), nullptr, out, sizeof out, nullptr), VKF_OK) << vkf_last_error();
    EXPECT_EQ(std::string(out), p["greedy_text"].get<std::string>());
    ASSERT_EQ(vkf_translate_start(h.session, text.c_str(), &defaults, &job), VKF_OK) << vkf_last_error();
    ASSERT_EQ(vkf_job_wait(job, 60000), VKF_OK) << vkf_last_error();
    ASSERT_EQ(vkf_job_text(job, out, sizeof out, nullptr), VKF_OK) << vkf_last_error();
    EXPECT_EQ(std::string(out), p["greedy_text"].get<std::string>());
    vkf_job_free(job);
  }
}

// GPT-2 (64 positions): the C defaults are the C++ defaults for the prompt, the
// command's; a prompt that leaves one position gets one token, and a max_new_tokens the
// positions cannot hold is refused by name.
TEST(CAbi, DefaultOptionsFitAGpt2PromptLikeTheCommand) {
  Handles h;
  h.open(kGpt2);
  vkf::Context ctx({.validation = true});
  auto model = vkf::Model::load(ctx, kGpt2);
  vkf::Session cxx(model);
  for (size_t length : {size_t(3), size_t(60), size_t(64)}) {
    SCOPED_TRACE(length);
    std::vector<uint32_t> prompt(length);
    for (size_t i = 0; i < length; ++i) prompt[i] = uint32_t(5 + (i * 37) % 300);
    const auto want = cxx.generate({prompt}, vkf::GenerateOptions::defaults(model->config(), length))[0];
    EXPECT_LE(want.size(), std::min<size_t>(64, 64 - length + 1));
    EXPECT_EQ(generate(h.session, prompt, nullptr), want);
    if (length == 3) EXPECT_GT(want.size(), 10u) << "stopped early: the check would not see the length";
  }
  vkf_generate_options o = vkf_generate_options_default();
  o.max_new_tokens = 63;  // 3 + 63 - 1 positions: one too many
  generate(h.session, {5, 17, 9}, &o, VKF_ERROR_INVALID_INPUT);
  EXPECT_TRUE(error_mentions("positions")) << vkf_last_error();
}

// Structs of older layouts: accepted, fields past them at their defaults (so an ABI 2
// caller gets the model's own repetition penalty and 64 steps per submit); sizes that cut
// into a field, are larger than this library's or smaller than the first layout are refused.
TEST(CAbi, StructsAsOlderCallersCompiledThemAreTaken) {
  Handles h;
  h.open(kGpt2);
  const std::vector<uint32_t> prompt = {5, 17, 9, 300, 41};
  vkf_generate_options current = vkf_generate_options_default();
  current.max_new_tokens = 12;
  const auto want = generate(h.session, prompt, &current);
  ASSERT_EQ(want.size(), 12u);

  GenerateOptionsAbi1 v1{};
  v1.struct_size = sizeof v1;
  v1.max_new_tokens = 12;
  v1.beam = 1;
  v1.length_penalty = 1;
  v1.top_p = 1;
  EXPECT_EQ(generate(h.session, prompt, &v1), want) << "ABI 1 (" << sizeof v1 << " bytes)";
  GenerateOptionsAbi2 v2{};
  v2.abi1 = v1;
  v2.abi1.struct_size = sizeof v2;
  v2.submit_budget_ms = 2;
  EXPECT_EQ(generate(h.session, prompt, &v2), want) << "ABI 2 (" << sizeof v2 << " bytes)";
  v2.abi1.struct_size = offsetof(GenerateOptionsAbi2, on_token);  // ABI 2 before on_token: 48 bytes
  EXPECT_EQ(generate(h.session, prompt, &v2), want);
  GenerateOptionsAbi3 v3{};
  v3.abi2 = v2;
  v3.abi2.abi1.struct_size = sizeof v3;
  v3.max_steps_per_submit = 2;
  EXPECT_EQ(generate(h.session, prompt, &v3), want) << "ABI 3";

  // A struct_size that ends inside a field, past this library's struct or before the
  // first layout: refused, naming the struct and the sizes it takes.
  for (uint32_t size : {uint32_t(offsetof(vkf_generate_options, seed) + 4), uint32_t(sizeof(vkf_generate_options) + 8),
                        uint32_t(8), uint32_t(0)}) {
    current.struct_size = size;
    generate(h.session, prompt, &current, VKF_ERROR_INVALID_ARGUMENT);
    EXPECT_TRUE(error_mentions("vkf_generate_options.struct_size")) << size << ": " << vkf_last_error();
  }

  // vkf_context_options of ABI 1: within_heap_budget and the cache take their defaults.
  ContextOptionsAbi1 c1{sizeof(ContextOptionsAbi1), nullptr, 1};
  vkf_context* ctx = nullptr;
  ASSERT_EQ(vkf_context_create(reinterpret_cast<const vkf_context_options*>(&c1), &ctx), VKF_OK) << vkf_last_error();
  vkf_context_free(ctx);
  vkf_context_options co = vkf_context_options_default();
  co.struct_size = offsetof(vkf_context_options, cache_dir) + 2;
  EXPECT_EQ(vkf_context_create(&co, &ctx), VKF_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(error_mentions("vkf_context_options.struct_size")) << vkf_last_error();

  // Output structs: an ABI 3 caller's vkf_generate_stats is written up to its size only.
  struct {
    GenerateStatsAbi3 stats;
    unsigned char after[32];
  } old;
  std::memset(&old, 0xAB, sizeof old);
  old.stats.struct_size = sizeof old.stats;
  ASSERT_EQ(vkf_session_stats(h.session, reinterpret_cast<vkf_generate_stats*>(&old.stats)), VKF_OK)
      << vkf_last_error();
  EXPECT_EQ(old.stats.tokens, 12u);
  for (unsigned char b : old.after) ASSERT_EQ(b, 0xAB) << "written past the caller's struct";
  vkf_generate_stats now{};
  now.struct_size = sizeof now;
  ASSERT_EQ(vkf_session_stats(h.session, &now), VKF_OK) << vkf_last_error();
  EXPECT_EQ(now.prompt_tokens, prompt.size());
  EXPECT_GT(now.prompt_ms, 0);
  EXPECT_EQ(now.decode_tokens, 11u) << "the first token is the prompt's";
  EXPECT_EQ(now.encode_ms, 0);
}

// A buffer too small keeps the result: vkf_session_last_tokens and _text fetch it
// without running again, until the next generation.
TEST(CAbi, ATooSmallBufferKeepsTheResult) {
  Handles h;
  h.open(kLlama);
  uint32_t ids[] = {357, 39, 68, 264};
  uint32_t few[2];
  size_t count = 0, n = 0;
  EXPECT_EQ(vkf_session_last_tokens(h.session, 0, few, 2, &n), VKF_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(error_mentions("no result")) << vkf_last_error();
  ASSERT_EQ(vkf_generate(h.session, ids, 4, nullptr, few, 2, &count), VKF_ERROR_BUFFER_TOO_SMALL);
  ASSERT_GT(count, 2u);
  std::vector<uint32_t> kept(count);
  ASSERT_EQ(vkf_session_last_tokens(h.session, 0, kept.data(), kept.size(), &n), VKF_OK) << vkf_last_error();
  EXPECT_EQ(n, count);
  EXPECT_EQ(vkf_session_last_tokens(h.session, 0, few, 2, &n), VKF_ERROR_BUFFER_TOO_SMALL);
  EXPECT_EQ(vkf_session_last_tokens(h.session, 1, few, 2, &n), VKF_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(error_mentions("output 1")) << vkf_last_error();
  std::vector<uint32_t> again(256);
  ASSERT_EQ(vkf_generate(h.session, ids, 4, nullptr, again.data(), again.size(), &n), VKF_OK);
  again.resize(n);
  EXPECT_EQ(kept, again);
  char text[1024], want[1024];
  ASSERT_EQ(vkf_detokenize(h.model, kept.data(), kept.size(), want, sizeof want, nullptr), VKF_OK);
  ASSERT_EQ(vkf_session_last_text(h.session, 0, text, sizeof text, nullptr), VKF_OK) << vkf_last_error();
  EXPECT_STREQ(text, want);
  char tiny[1];
  size_t needed = 0;
  ASSERT_EQ(vkf_translate(h.session, "Hello world", nullptr, tiny, 1, &needed), VKF_ERROR_BUFFER_TOO_SMALL);
  std::vector<char> whole(needed);
  ASSERT_EQ(vkf_session_last_text(h.session, 0, whole.data(), whole.size(), nullptr), VKF_OK) << vkf_last_error();
  char direct[1024];
  ASSERT_EQ(vkf_translate(h.session, "Hello world", nullptr, direct, sizeof direct, nullptr), VKF_OK);
  EXPECT_STREQ(whole.data(), direct);

  Handles ids_only;  // no tokenizer: the text is refused by name
  ids_only.open(kHf + "/llama/gqa");
  const uint32_t in_gqa[] = {5, 17, 9};
  ASSERT_EQ(vkf_generate(ids_only.session, in_gqa, 3, nullptr, few, 2, &count), VKF_ERROR_BUFFER_TOO_SMALL);
  EXPECT_EQ(vkf_session_last_text(ids_only.session, 0, text, sizeof text, nullptr), VKF_ERROR_FAILED);
  EXPECT_TRUE(error_mentions("no tokenizer")) << vkf_last_error();
}

// A job whose callback waits on the test: PENDING while it runs, BUSY for a call on its
// session, then OK once released.
struct Gate {
  std::mutex m;
  std::condition_variable cv;
  bool open = false, entered = false;
  static int on_token(void* user, size_t, uint32_t, const char*, size_t) {
    auto* g = static_cast<Gate*>(user);
    std::unique_lock lock(g->m);
    g->entered = true;
    g->cv.notify_all();
    g->cv.wait(lock, [&] { return g->open; });
    return 0;
  }
};

// One call for each status vkformer.h documents, returning it.
TEST(CAbi, EachDocumentedStatusComesFromTheCallDocumentedToReturnIt) {
  Handles h;
  h.open(kLlama);
  uint32_t ids[] = {357, 39, 68};
  uint32_t tokens[256];
  size_t count = 0;
  EXPECT_EQ(vkf_generate(h.session, ids, 3, nullptr, tokens, 256, &count), VKF_OK);
  EXPECT_EQ(vkf_generate(nullptr, ids, 3, nullptr, tokens, 256, &count), VKF_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(vkf_generate(h.session, ids, 3, nullptr, tokens, 1, &count), VKF_ERROR_BUFFER_TOO_SMALL);
  vkf_model* m = nullptr;
  EXPECT_EQ(vkf_model_load(h.context, (kHf + "/no_such_model").c_str(), VKF_PRECISION_FP32, &m), VKF_ERROR_NOT_FOUND);
  EXPECT_EQ(vkf_tokenize(h.model, "\xC3\x28", tokens, 256, &count), VKF_ERROR_INVALID_INPUT);  // not UTF-8
  EXPECT_TRUE(error_mentions("UTF-8")) << vkf_last_error();
  const uint32_t outside[] = {5, 100000};
  EXPECT_EQ(vkf_generate(h.session, outside, 2, nullptr, tokens, 256, &count), VKF_ERROR_INVALID_INPUT);
  uint32_t width = 0;  // a model that embeds nothing (it generates)
  EXPECT_EQ(vkf_embedding_width(h.model, &width), VKF_ERROR_UNSUPPORTED);
  Handles no_tokenizer;
  no_tokenizer.open(kHf + "/llama/gqa");
  EXPECT_EQ(vkf_tokenize(no_tokenizer.model, "text", tokens, 256, &count), VKF_ERROR_FAILED);

  // PENDING and BUSY while a job runs (held in its callback), then OK; CANCELLED.
  Gate gate;
  vkf_generate_options held = vkf_generate_options_default();
  held.on_token = &Gate::on_token;
  held.on_token_user = &gate;
  vkf_job* job = nullptr;
  ASSERT_EQ(vkf_generate_start(h.session, ids, 3, &held, &job), VKF_OK) << vkf_last_error();
  {
    std::unique_lock lock(gate.m);
    gate.cv.wait(lock, [&] { return gate.entered; });
  }
  EXPECT_EQ(vkf_job_poll(job), VKF_PENDING);
  EXPECT_EQ(vkf_job_wait(job, 1), VKF_PENDING);
  EXPECT_EQ(vkf_job_tokens(job, tokens, 256, &count), VKF_PENDING);
  EXPECT_EQ(vkf_generate(h.session, ids, 3, nullptr, tokens, 256, &count), VKF_ERROR_BUSY);
  EXPECT_TRUE(error_mentions("busy")) << vkf_last_error();
  vkf_job* second = nullptr;
  EXPECT_EQ(vkf_generate_start(h.session, ids, 3, nullptr, &second), VKF_ERROR_BUSY);
  {
    std::lock_guard lock(gate.m);
    gate.open = true;
  }
  gate.cv.notify_all();
  EXPECT_EQ(vkf_job_wait(job, 60000), VKF_OK) << vkf_last_error();
  vkf_job_free(job);
  Gate cancelled;
  held.on_token_user = &cancelled;
  ASSERT_EQ(vkf_generate_start(h.session, ids, 3, &held, &job), VKF_OK) << vkf_last_error();
  {
    std::unique_lock lock(cancelled.m);
    cancelled.cv.wait(lock, [&] { return cancelled.entered; });
  }
  EXPECT_EQ(vkf_job_cancel(job), VKF_OK);
  {
    std::lock_guard lock(cancelled.m);
    cancelled.open = true;
  }
  cancelled.cv.notify_all();
  EXPECT_EQ(vkf_job_wait(job, 60000), VKF_ERROR_CANCELLED);
  vkf_job_free(job);

  // A job's failure is the status the same call returns synchronously.
  ASSERT_EQ(vkf_generate_start(h.session, outside, 2, nullptr, &job), VKF_OK);
  EXPECT_EQ(vkf_job_wait(job, 60000), VKF_ERROR_INVALID_INPUT);
  vkf_job_free(job);

  // OUT_OF_MEMORY: a memory limit below the model; DEVICE_LOST: a lost device.
  vkf_context_options small = vkf_context_options_default();
  small.memory_limit = 4096;
  vkf_context* tight = nullptr;
  ASSERT_EQ(vkf_context_create(&small, &tight), VKF_OK);
  EXPECT_EQ(vkf_model_load(tight, kLlama.c_str(), VKF_PRECISION_FP32, &m), VKF_ERROR_OUT_OF_MEMORY);
  vkf_context_free(tight);
  h.context->ctx->inject_faults({.submit = 1});
  EXPECT_EQ(vkf_generate(h.session, ids, 3, nullptr, tokens, 256, &count), VKF_ERROR_DEVICE_LOST);
  h.context->ctx->inject_faults({});
}

// Every C entry point called from inside a job's own on_token: nothing crashes, throws
// across the boundary or deadlocks. vkf_job_free and vkf_session_free of the running job
// and its session free nothing and say so; calls on the busy session are BUSY; the rest work.
struct FromCallback {
  std::atomic<vkf_job*> job{nullptr};
  vkf_session* session = nullptr;
  vkf_model* model = nullptr;
  vkf_context* context = nullptr;
  int calls = 0;
  std::vector<std::string> problems;
  static int on_token(void* user, size_t, uint32_t token, const char*, size_t) {
    auto* f = static_cast<FromCallback*>(user);
    if (token == VKF_TOKEN_END || f->calls++) return 0;  // the first token only
    while (!f->job.load()) std::this_thread::yield();
    auto expect = [&](bool ok, const char* what) {
      if (!ok) f->problems.push_back(std::string(what) + ": " + vkf_last_error());
    };
    vkf_job_free(f->job.load());
    expect(std::strstr(vkf_last_error(), "nothing was freed") != nullptr, "vkf_job_free");
    vkf_session_free(f->session);
    expect(std::strstr(vkf_last_error(), "nothing was freed") != nullptr, "vkf_session_free");
    uint32_t ids[] = {357, 39}, tokens[64];
    size_t n = 0;
    expect(vkf_generate(f->session, ids, 2, nullptr, tokens, 64, &n) == VKF_ERROR_BUSY, "vkf_generate");
    vkf_job* other = nullptr;
    expect(vkf_generate_start(f->session, ids, 2, nullptr, &other) == VKF_ERROR_BUSY, "vkf_generate_start");
    expect(vkf_job_poll(f->job.load()) == VKF_PENDING, "vkf_job_poll");
    expect(vkf_job_wait(f->job.load(), 0) == VKF_PENDING, "vkf_job_wait");
    expect(vkf_job_tokens(f->job.load(), tokens, 64, &n) == VKF_PENDING, "vkf_job_tokens");
    vkf_generate_stats stats{};
    stats.struct_size = sizeof stats;
    expect(vkf_session_stats(f->session, &stats) == VKF_ERROR_BUSY, "vkf_session_stats");
    expect(vkf_session_last_tokens(f->session, 0, tokens, 64, &n) == VKF_ERROR_BUSY, "vkf_session_last_tokens");
    expect(vkf_session_warmup(f->session) == VKF_ERROR_BUSY, "vkf_session_warmup");
    expect(vkf_tokenize(f->model, "Hello", tokens, 64, &n) == VKF_OK, "vkf_tokenize");
    char text[256];
    expect(vkf_detokenize(f->model, ids, 2, text, sizeof text, nullptr) == VKF_OK, "vkf_detokenize");
    vkf_model_info info{};
    info.struct_size = sizeof info;
    expect(vkf_model_info_get(f->model, &info) == VKF_OK, "vkf_model_info_get");
    uint64_t allocated = 0;
    expect(vkf_context_memory(f->context, &allocated, nullptr) == VKF_OK, "vkf_context_memory");
    expect(vkf_job_cancel(f->job.load()) == VKF_OK, "vkf_job_cancel");
    return 0;
  }
};

TEST(CAbi, EveryEntryPointFromInsideTheJobsOwnCallbackIsSafe) {
  Handles h;
  h.open(kLlama);
  FromCallback f;
  f.session = h.session;
  f.model = h.model;
  f.context = h.context;
  vkf_generate_options o = vkf_generate_options_default();
  o.on_token = &FromCallback::on_token;
  o.on_token_user = &f;
  const uint32_t ids[] = {357, 39, 68};
  vkf_job* job = nullptr;
  ASSERT_EQ(vkf_generate_start(h.session, ids, 3, &o, &job), VKF_OK) << vkf_last_error();
  f.job = job;
  EXPECT_EQ(vkf_job_wait(job, 60000), VKF_ERROR_CANCELLED) << vkf_last_error();
  for (const auto& p : f.problems) ADD_FAILURE() << p;
  EXPECT_GE(f.calls, 1);
  vkf_job_free(job);  // from this thread: freed
  uint32_t tokens[128];
  size_t n = 0;
  EXPECT_EQ(vkf_generate(h.session, ids, 3, nullptr, tokens, 128, &n), VKF_OK) << "the session lives: " << vkf_last_error();
}

// Text past what the model can read is refused before it is tokenized (4 MB in well under
// a second); vkf_model_set_text_limit lowers or raises the bound, 0 restores it.
TEST(CAbi, TextIsBoundedBeforeItIsTokenizedAndTheLimitCanBeSet) {
  Handles h;
  h.open(kLlama);
  const std::string huge(4u << 20, 'a');
  std::vector<uint32_t> ids(1u << 20);
  size_t n = 0;
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(vkf_tokenize(h.model, huge.c_str(), ids.data(), ids.size(), &n), VKF_ERROR_INVALID_INPUT);
  EXPECT_TRUE(error_mentions("64 positions can read")) << vkf_last_error();
  char out[64];
  EXPECT_EQ(vkf_translate(h.session, huge.c_str(), nullptr, out, sizeof out, nullptr), VKF_ERROR_INVALID_INPUT);
  vkf_job* job = nullptr;
  EXPECT_EQ(vkf_translate_start(h.session, huge.c_str(), nullptr, &job), VKF_ERROR_INVALID_INPUT);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 1.0);
  ASSERT_EQ(vkf_model_set_text_limit(h.model, 10), VKF_OK);
  EXPECT_EQ(vkf_tokenize(h.model, "Hello world", ids.data(), ids.size(), &n), VKF_ERROR_INVALID_INPUT);
  EXPECT_TRUE(error_mentions("vkf_model_set_text_limit")) << vkf_last_error();
  EXPECT_EQ(vkf_translate(h.session, "Hello world", nullptr, out, sizeof out, nullptr), VKF_ERROR_INVALID_INPUT);
  EXPECT_EQ(vkf_tokenize(h.model, "Hello", ids.data(), ids.size(), &n), VKF_OK);
  ASSERT_EQ(vkf_model_set_text_limit(h.model, 8u << 20), VKF_OK);  // a long document, to be cut by the app
  EXPECT_EQ(vkf_tokenize(h.model, huge.c_str(), nullptr, 0, &n), VKF_ERROR_BUFFER_TOO_SMALL) << vkf_last_error();
  EXPECT_GT(n, 64u) << "tokenized whole: its count";
  ASSERT_EQ(vkf_model_set_text_limit(h.model, 0), VKF_OK);
  EXPECT_EQ(vkf_tokenize(h.model, huge.c_str(), ids.data(), ids.size(), &n), VKF_ERROR_INVALID_INPUT);
  EXPECT_EQ(vkf_model_set_text_limit(nullptr, 5), VKF_ERROR_INVALID_ARGUMENT);
}

// C options that would do nothing are refused by name, as the command refuses its flags.
TEST(CAbi, OptionsThatWouldDoNothingAreRefused) {
  Handles h;
  h.open(kGpt2);
  vkf_generate_options o = vkf_generate_options_default();
  o.top_k = 5;  // without temperature
  generate(h.session, {5, 17}, &o, VKF_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(error_mentions("top_k and top_p")) << vkf_last_error();
  o = vkf_generate_options_default();
  o.top_p = 0.5f;
  generate(h.session, {5, 17}, &o, VKF_ERROR_INVALID_ARGUMENT);
  o = vkf_generate_options_default();
  o.length_penalty = 2.0f;  // greedy
  generate(h.session, {5, 17}, &o, VKF_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(error_mentions("length_penalty")) << vkf_last_error();
  o = vkf_generate_options_default();
  o.temperature = 0.7f;
  o.beam = 2;
  generate(h.session, {5, 17}, &o, VKF_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(error_mentions("temperature samples and beam")) << vkf_last_error();
  vkf_generate_options zero{};  // zero-initialised: every field's default meaning, accepted
  zero.struct_size = sizeof zero;
  generate(h.session, {5, 17}, &zero);
}

}  // namespace
