// The C API's promise, tested as an attacker would: every entry point, synchronous and
// _start, fed what makes the C++ layer throw (text that is not UTF-8, lengths and counts
// whose arithmetic would overflow, injected allocation and device failures, two threads
// on one session) answers with a status and a message, never a signal. A failure here
// is a crash of the test binary, which CTest reports.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "capi/handles.hpp"  // white box: the context behind a handle, to arm injected faults
#include "vkformer/vkformer.h"

namespace {

const std::string kSource = VKF_SOURCE_DIR;
const std::string kDates = kSource + "/samples/dates";

bool error_mentions(const char* part) { return std::strstr(vkf_last_error(), part) != nullptr; }

// What an injected fault may end a call with: a failure's status (a refused allocation is
// out of memory, a lost device is lost, a failed map or compile is a failure).
bool failure(vkf_status s) { return s == VKF_ERROR_FAILED || s == VKF_ERROR_OUT_OF_MEMORY || s == VKF_ERROR_DEVICE_LOST; }

struct Opened {
  vkf_context* context = nullptr;
  vkf_model* model = nullptr;
  vkf_session* session = nullptr;
  explicit Opened(const std::string& dir) {
    vkf_context_options o = vkf_context_options_default();
    o.validation = 1;
    EXPECT_EQ(vkf_context_create(&o, &context), VKF_OK) << vkf_last_error();
    EXPECT_EQ(vkf_model_load(context, dir.c_str(), VKF_PRECISION_FP32, &model), VKF_OK) << vkf_last_error();
    EXPECT_EQ(vkf_session_create(model, &session), VKF_OK) << vkf_last_error();
  }
  ~Opened() {
    vkf_session_free(session);
    vkf_model_free(model);
    vkf_context_free(context);
  }
  void inject(const vkf::InjectedFaults& f) { context->ctx->inject_faults(f); }
};

// A job's outcome once it has ended (jobs take well under a minute here).
vkf_status finish(vkf_job* job) {
  vkf_status s = VKF_PENDING;
  for (int i = 0; i < 600 && s == VKF_PENDING; ++i) s = vkf_job_wait(job, 100);
  return s;
}

TEST(CBoundary, TextThatIsNotUtf8IsAStatusInEveryTranslateCall) {
  for (const std::string dir : {kDates, kSource + "/tests/hf/marian", kSource + "/tests/hf/bart"}) {
    SCOPED_TRACE(dir);
    Opened h(dir);
    ASSERT_NE(h.session, nullptr);
    for (const char* text : {"caf\xe9", "\xff\xfe", "3/3/98\xc0"}) {
      char out[256];
      EXPECT_EQ(vkf_translate(h.session, text, nullptr, out, sizeof out, nullptr), VKF_ERROR_INVALID_INPUT);
      EXPECT_TRUE(error_mentions("not valid UTF-8")) << vkf_last_error();
      vkf_job* job = reinterpret_cast<vkf_job*>(1);
      EXPECT_EQ(vkf_translate_start(h.session, text, nullptr, &job), VKF_ERROR_INVALID_INPUT);
      EXPECT_TRUE(error_mentions("vkf_translate_start")) << vkf_last_error();
      EXPECT_TRUE(error_mentions("not valid UTF-8")) << vkf_last_error();
      EXPECT_EQ(job, nullptr);
    }
    // The session is free again afterwards.
    char out[256];
    vkf_generate_options o = vkf_generate_options_default();
    o.max_new_tokens = 3;
    EXPECT_EQ(vkf_translate(h.session, "3/3/98", &o, out, sizeof out, nullptr), VKF_OK) << vkf_last_error();
  }
}

TEST(CBoundary, HugeLengthsAndCountsAreRefusedBeforeAnyArithmetic) {
  Opened h(kDates);
  ASSERT_NE(h.session, nullptr);
  const uint32_t ids[] = {5, 6, 7};
  uint32_t tokens[8];
  float logits[8];
  size_t count = 12345;
  EXPECT_EQ(vkf_generate(h.session, ids, SIZE_MAX / 8, nullptr, tokens, 8, &count), VKF_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(error_mentions("source_length")) << vkf_last_error();
  EXPECT_TRUE(error_mentions("max_position")) << vkf_last_error();
  vkf_job* job = nullptr;
  EXPECT_EQ(vkf_generate_start(h.session, ids, SIZE_MAX / 8, nullptr, &job), VKF_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(error_mentions("source_length")) << vkf_last_error();
  EXPECT_EQ(job, nullptr);
  // target_length x 54 wraps to 56 floats: it must not pass as "fits in 64".
  EXPECT_EQ(vkf_score(h.session, ids, 3, ids, SIZE_MAX / 54 + 2, logits, 64, &count), VKF_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(error_mentions("target_length")) << vkf_last_error();
  EXPECT_EQ(vkf_score(h.session, ids, SIZE_MAX / 4, ids, 2, logits, 64, &count), VKF_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(error_mentions("source_length")) << vkf_last_error();

  vkf_forecaster* f = nullptr;
  ASSERT_EQ(vkf_forecaster_load(h.context, (kSource + "/samples/forecast").c_str(), VKF_PRECISION_FP32, &f), VKF_OK)
      << vkf_last_error();
  float window[30] = {};
  float out[8];
  EXPECT_EQ(vkf_forecast(f, window, SIZE_MAX / 7 + 1, out, 8), VKF_ERROR_INVALID_ARGUMENT);  // x 7 wraps to 5
  EXPECT_TRUE(error_mentions("count")) << vkf_last_error();
  EXPECT_EQ(vkf_forecast(f, window, SIZE_MAX / 30 + 1, out, 8), VKF_ERROR_INVALID_ARGUMENT);  // x 30 wraps
  vkf_forecaster_free(f);
}

// Two threads on one session: the header forbids it, and the second call is refused
// with a status while the first runs, instead of racing it into a crash.
TEST(CBoundary, TwoThreadsOnOneSessionGetAStatusNotACrash) {
  Opened h(kDates);
  ASSERT_NE(h.session, nullptr);
  std::atomic<int> ok{0}, busy{0}, other{0};
  auto run = [&] {
    const uint32_t ids[] = {23, 33, 47, 4, 12, 5, 4, 10, 18, 18, 17};
    uint32_t tokens[64];
    size_t count = 0;
    for (int i = 0; i < 12; ++i) {
      const vkf_status s = vkf_generate(h.session, ids, 11, nullptr, tokens, 64, &count);
      if (s == VKF_OK) ++ok;
      else if (s == VKF_ERROR_BUSY && error_mentions("the session is busy")) ++busy;
      else ++other;
    }
  };
  std::thread a(run), b(run);
  a.join();
  b.join();
  EXPECT_EQ(other.load(), 0);
  EXPECT_GT(ok.load(), 0);
  EXPECT_EQ(ok + busy, 24);
  // A job holds the session too: synchronous calls and statistics are refused meanwhile.
  const uint32_t ids[] = {5, 6, 7};
  vkf_job* job = nullptr;
  ASSERT_EQ(vkf_generate_start(h.session, ids, 3, nullptr, &job), VKF_OK) << vkf_last_error();
  uint32_t tokens[64];
  size_t count = 0;
  const vkf_status during = vkf_generate(h.session, ids, 3, nullptr, tokens, 64, &count);
  if (during != VKF_OK) {  // (a job may already have finished on a fast device: then the session is still held)
    EXPECT_EQ(during, VKF_ERROR_BUSY);
    EXPECT_TRUE(error_mentions("busy")) << vkf_last_error();
  }
  EXPECT_EQ(finish(job), VKF_OK) << vkf_last_error();
  vkf_job_free(job);
  EXPECT_EQ(vkf_generate(h.session, ids, 3, nullptr, tokens, 64, &count), VKF_OK) << vkf_last_error();
}

// Injected failures at the first host allocation, device allocation and submit of each
// call: a status and the reason, and the session (or a new context) works afterwards.
TEST(CBoundary, InjectedFailuresInEveryCallAreStatuses) {
  const uint32_t ids[] = {23, 33, 47, 4, 12, 5, 4, 10, 18, 18, 17};
  const vkf::InjectedFaults faults[] = {{.device_allocation = 1}, {.host_allocation = 1}, {.submit = 1}};
  for (const auto& fault : faults) {
    SCOPED_TRACE(std::string("fault: ") + (fault.device_allocation ? "device allocation" : fault.host_allocation ? "host allocation" : "submit"));
    auto calls = [&](Opened& h) {
      uint32_t tokens[64];
      float logits[4 * 54];
      char text[64];
      size_t count = 0;
      std::vector<std::pair<const char*, vkf_status>> got;
      h.inject(fault);
      got.push_back({"vkf_generate", vkf_generate(h.session, ids, 11, nullptr, tokens, 64, &count)});
      h.inject(fault);
      got.push_back({"vkf_translate", vkf_translate(h.session, "3/3/98", nullptr, text, sizeof text, nullptr)});
      h.inject(fault);
      got.push_back({"vkf_score", vkf_score(h.session, ids, 11, ids, 4, logits, 4 * 54, &count)});
      h.inject(fault);
      got.push_back({"vkf_session_warmup", vkf_session_warmup(h.session)});
      for (const bool text_job : {false, true}) {
        h.inject(fault);
        vkf_job* job = nullptr;
        const vkf_status started = text_job ? vkf_translate_start(h.session, "3/3/98", nullptr, &job)
                                            : vkf_generate_start(h.session, ids, 11, nullptr, &job);
        got.push_back({text_job ? "vkf_translate_start" : "vkf_generate_start", started == VKF_OK ? finish(job) : started});
        vkf_job_free(job);
      }
      return got;
    };
    Opened h(kDates);
    ASSERT_NE(h.session, nullptr);
    int failed = 0;
    for (const auto& [fn, status] : calls(h)) {
      failed += failure(status);
      // A fault the call never reached (its work was already cached) may leave it OK;
      // what it may never be is anything but OK or a failure's status with a message.
      EXPECT_TRUE(status == VKF_OK || failure(status)) << fn << ": " << status;
      if (failure(status)) EXPECT_STRNE(vkf_last_error(), "") << fn;
    }
    EXPECT_GT(failed, 0) << "no call reached the injected fault: the test tests nothing";
    h.inject({});
    if (!fault.submit) {  // a lost device stays lost; the others leave the session usable
      uint32_t tokens[64];
      size_t count = 0;
      EXPECT_EQ(vkf_generate(h.session, ids, 11, nullptr, tokens, 64, &count), VKF_OK) << vkf_last_error();
    }
  }
  // Loading under each fault.
  for (const auto& fault : faults) {
    vkf_context* c = nullptr;
    ASSERT_EQ(vkf_context_create(nullptr, &c), VKF_OK) << vkf_last_error();
    c->ctx->inject_faults(fault);
    vkf_model* m = nullptr;
    const vkf_status s = vkf_model_load(c, kDates.c_str(), VKF_PRECISION_FP32, &m);
    EXPECT_TRUE(s == VKF_OK || failure(s)) << s;
    if (s != VKF_OK) EXPECT_EQ(m, nullptr);
    vkf_forecaster* f = nullptr;
    c->ctx->inject_faults(fault);
    const vkf_status fs = vkf_forecaster_load(c, (kSource + "/samples/forecast").c_str(), VKF_PRECISION_FP32, &f);
    EXPECT_TRUE(fs == VKF_OK || failure(fs)) << fs;
    if (f) {
      float window[30] = {}, out[7];
      c->ctx->inject_faults(fault);
      const vkf_status p = vkf_forecast(f, window, 1, out, 7);
      EXPECT_TRUE(p == VKF_OK || failure(p)) << p;
    }
    vkf_forecaster_free(f);
    vkf_model_free(m);
    vkf_context_free(c);
  }
}

// The other entry points' C++ failures: a device that does not exist, a model that is
// not one, a cache directory that cannot be made.
TEST(CBoundary, OtherEntryPointsReportWhatTheCxxLayerThrows) {
  char name[64];
  EXPECT_EQ(vkf_device_name(1u << 30, name, sizeof name, nullptr), VKF_ERROR_INVALID_ARGUMENT);
  vkf_context_options o = vkf_context_options_default();
  o.device = "no such device anywhere";
  vkf_context* c = nullptr;
  EXPECT_EQ(vkf_context_create(&o, &c), VKF_ERROR_FAILED);
  EXPECT_TRUE(error_mentions("no such device anywhere")) << vkf_last_error();
  ASSERT_EQ(vkf_context_create(nullptr, &c), VKF_OK) << vkf_last_error();
  vkf_model* m = nullptr;
  EXPECT_EQ(vkf_model_load(c, "/nonexistent\xff", VKF_PRECISION_FP32, &m), VKF_ERROR_NOT_FOUND);
  EXPECT_TRUE(error_mentions("does not exist")) << vkf_last_error();
  vkf_forecaster* f = nullptr;
  EXPECT_EQ(vkf_forecaster_load(c, "/dev/null", VKF_PRECISION_FP32, &f), VKF_ERROR_FAILED);
  EXPECT_STRNE(vkf_last_error(), "");
  vkf_context_free(c);
}

}  // namespace

namespace {

// Zero-initialised options work: 0 where no value is valid (top_p, beam) means the
// default, and errors name the C field once, not the C++ layer's words after it.
TEST(CBoundary, ZeroInitialisedOptionsMeanTheDefaults) {
  Opened h(kDates);
  ASSERT_NE(h.session, nullptr);
  vkf_generate_options o = {sizeof o};
  o.temperature = 0.8f;
  o.max_new_tokens = 8;
  const uint32_t ids[] = {23, 33, 47, 4, 12, 5, 4, 10, 18, 18, 17};
  uint32_t tokens[64];
  size_t count = 0;
  EXPECT_EQ(vkf_generate(h.session, ids, 11, &o, tokens, 64, &count), VKF_OK) << vkf_last_error();
  vkf_generate_options g = {sizeof g};
  EXPECT_EQ(vkf_generate(h.session, ids, 11, &g, tokens, 64, &count), VKF_OK) << vkf_last_error();  // greedy
  o.top_p = 1.5f;
  EXPECT_EQ(vkf_generate(h.session, ids, 11, &o, tokens, 64, &count), VKF_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(error_mentions("vkf_generate: vkf_generate_options.top_p must be in (0, 1]")) << vkf_last_error();
  o.top_p = 0;
  o.temperature = -1;
  EXPECT_EQ(vkf_generate(h.session, ids, 11, &o, tokens, 64, &count), VKF_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(error_mentions("vkf_generate_options.temperature must be from 0")) << vkf_last_error();
  EXPECT_FALSE(error_mentions("generate: generate:")) << vkf_last_error();
  o.temperature = 0;
  o.beam = 100000;
  EXPECT_EQ(vkf_generate(h.session, ids, 11, &o, tokens, 64, &count), VKF_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(error_mentions("vkf_generate_options.beam must be from 1 to")) << vkf_last_error();
}

}  // namespace
