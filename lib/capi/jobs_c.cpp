// The C API's jobs: a translation or generation on a thread of its own, polled,
// waited for with a timeout, or cancelled from any thread (vkf_*_start, vkf_job_*).
#include <chrono>
#include <functional>

#include "handles.hpp"

using capi::generate_options;
using capi::guarded;
using capi::invalid;
using capi::last_error;
using capi::too_small;
using capi::copy_string;

extern "C" {

namespace {

// Starts `work` on the job's thread; it fills the result and the outcome.
vkf_status start_job(const char* fn, vkf_session* session, bool text, vkf_job** job,
                     std::function<void(vkf_job&)> work) {
  auto j = std::make_unique<vkf_job>();  // before the claim: a failure here leaves the session free
  bool expected = false;
  if (!session->busy.compare_exchange_strong(expected, true)) {
    last_error = std::string(fn) + ": the session is already running a job or another thread's call (one at a time)";
    return VKF_ERROR_BUSY;
  }
  j->session = session;
  j->text = text;
  vkf_job* raw = j.get();
  try {
    j->worker = std::thread([raw, work = std::move(work)] {
      vkf_status status = VKF_OK;
      std::string error;
      try {
        work(*raw);
      } catch (const vkf::Cancelled&) {
        status = VKF_ERROR_CANCELLED, error = "the job was cancelled";
      } catch (const vkf::Error& e) {
        status = capi::status_of(e.kind()), error = e.what();
      } catch (const std::bad_alloc&) {
        status = VKF_ERROR_OUT_OF_MEMORY, error = "out of host memory";
      } catch (const std::exception& e) {
        status = VKF_ERROR_FAILED, error = e.what();
      } catch (...) {
        status = VKF_ERROR_FAILED, error = "unknown error";
      }
      std::lock_guard lock(raw->mutex);
      raw->status = status;
      raw->error = error;
      raw->finished = true;
      raw->finished_cv.notify_all();
    });
  } catch (const std::exception& e) {
    session->busy = false;
    last_error = std::string(fn) + ": " + e.what();
    return VKF_ERROR_FAILED;
  }
  session->job = raw;
  *job = j.release();
  return VKF_OK;
}

// A finished job's outcome, its message as this thread's last error.
vkf_status outcome(const char* fn, vkf_job* job) {
  std::lock_guard lock(job->mutex);
  if (!job->finished) return VKF_PENDING;
  if (job->status != VKF_OK) last_error = std::string(fn) + ": " + job->error;
  return job->status;
}

}  // namespace

vkf_status vkf_translate_start(vkf_session* session, const char* text, const vkf_generate_options* options,
                               vkf_job** job) {
  const char* fn = "vkf_translate_start";
  if (!job) return invalid(fn, "job is NULL");
  *job = nullptr;
  if (!session) return invalid(fn, "session is NULL");
  if (!text) return invalid(fn, "text is NULL");
  if (!session->tokenizer) return invalid(fn, "the model has no tokenizer (vkf_model_info.has_tokenizer is 0): use vkf_generate_start with token ids");
  // Everything before the job's thread can throw too (the tokenizer refuses bad text).
  return guarded(fn, [&] {
    if (options && !capi::generate_options_size_ok(fn, options->struct_size)) return VKF_ERROR_INVALID_ARGUMENT;
    if (const vkf_status s = capi::check_text(fn, text, *session->tokenizer, session->session.model().config(),
                                              session->text_limit->load());
        s != VKF_OK)
      return s;
    auto ids = session->tokenizer->encode(text);
    if (ids.empty()) return invalid(fn, "the text is empty");
    auto g = generate_options(options, session->session.model().config(), fn, session->tokenizer, ids.size());
    if (!g) return VKF_ERROR_INVALID_ARGUMENT;
    return start_job(fn, session, true, job, [session, ids = std::move(ids), g = std::move(*g)](vkf_job& j) mutable {
      g.options.cancel = &j.cancel;
      j.result_text = session->tokenizer->decode(capi::run(session, {ids}, g)[0]);
    });
  });
}

vkf_status vkf_generate_start(vkf_session* session, const uint32_t* source, size_t source_length,
                              const vkf_generate_options* options, vkf_job** job) {
  const char* fn = "vkf_generate_start";
  if (!job) return invalid(fn, "job is NULL");
  *job = nullptr;
  if (!session) return invalid(fn, "session is NULL");
  if (!source || source_length == 0) return invalid(fn, "the source is empty (or NULL)");
  return guarded(fn, [&] {
    if (const vkf_status s = capi::check_length(fn, "source_length", source_length, session); s != VKF_OK) return s;
    auto g = generate_options(options, session->session.model().config(), fn, session->tokenizer, source_length);
    if (!g) return VKF_ERROR_INVALID_ARGUMENT;
    std::vector<uint32_t> ids(source, source + source_length);
    return start_job(fn, session, false, job, [session, ids = std::move(ids), g = std::move(*g)](vkf_job& j) mutable {
      g.options.cancel = &j.cancel;
      j.result_tokens = capi::run(session, {ids}, g)[0];
    });
  });
}

vkf_status vkf_job_poll(vkf_job* job) {
  if (!job) return invalid("vkf_job_poll", "job is NULL");
  return outcome("vkf_job_poll", job);
}

vkf_status vkf_job_wait(vkf_job* job, uint32_t timeout_ms) {
  if (!job) return invalid("vkf_job_wait", "job is NULL");
  {
    std::unique_lock lock(job->mutex);
    job->finished_cv.wait_for(lock, std::chrono::milliseconds(timeout_ms), [&] { return job->finished; });
  }
  return outcome("vkf_job_wait", job);
}

vkf_status vkf_job_cancel(vkf_job* job) {
  if (!job) return invalid("vkf_job_cancel", "job is NULL");
  job->cancel = true;
  return VKF_OK;
}

vkf_status vkf_job_text(vkf_job* job, char* out, size_t capacity, size_t* needed) {
  const char* fn = "vkf_job_text";
  if (!job) return invalid(fn, "job is NULL");
  if (!job->text) return invalid(fn, "the job generates tokens: use vkf_job_tokens");
  const vkf_status s = outcome(fn, job);
  if (s != VKF_OK) return s;
  return copy_string(fn, job->result_text, out, capacity, needed);
}

vkf_status vkf_job_tokens(vkf_job* job, uint32_t* tokens, size_t capacity, size_t* count) {
  const char* fn = "vkf_job_tokens";
  if (!job) return invalid(fn, "job is NULL");
  if (job->text) return invalid(fn, "the job translates text: use vkf_job_text");
  if (!count) return invalid(fn, "count is NULL");
  const vkf_status s = outcome(fn, job);
  if (s != VKF_OK) return s;
  *count = job->result_tokens.size();
  if (!tokens || capacity < job->result_tokens.size())
    return too_small(fn, std::to_string(job->result_tokens.size()) + " tokens were generated", capacity, tokens);
  std::copy(job->result_tokens.begin(), job->result_tokens.end(), tokens);
  return VKF_OK;
}

void vkf_job_free(vkf_job* job) {
  if (!job) return;
  if (job->worker.get_id() == std::this_thread::get_id()) {
    // From the job's own on_token: its thread cannot wait for itself, and the job's
    // state is in use below this call. Nothing is freed; the app frees it once it ends.
    capi::refuse_from_callback("vkf_job_free", job->session);
    return;
  }
  job->cancel = true;
  if (job->worker.joinable()) job->worker.join();
  if (job->session) {
    job->session->job = nullptr;
    job->session->busy = false;
  }
  delete job;
}

}  // extern "C"
