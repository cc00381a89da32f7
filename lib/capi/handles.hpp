#pragma once
#include <cstring>
// What the C API's files share: the handles behind the opaque C types, and the rules
// every entry point follows (no exception crosses into C; failures are a status and a
// message in the calling thread's last error).
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <functional>
#include <initializer_list>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "vkformer/vkformer.h"
#include "vkformer/vkformer.hpp"

struct vkf_context {
  std::shared_ptr<vkf::Context> ctx;
};

struct vkf_model {
  std::shared_ptr<vkf::Context> ctx;  // the model's weights live on it
  std::shared_ptr<const vkf::Model> model;
  std::shared_ptr<const vkf::Tokenizer> tokenizer;  // null without its files
  std::string no_tokenizer;  // why there is none: "has no tokenizer (vocab.json or ...)"
  std::string where;  // "model directory 'DIR'" or "model in memory", for messages
  std::shared_ptr<std::atomic<size_t>> text_limit = std::make_shared<std::atomic<size_t>>(0);  // 0: the default
  // An encoder-only model's sentence embeddings, made at load while its files are there
  // (in memory they are the caller's only during the load); else why there are none.
  std::unique_ptr<vkf::Embedder> embedder;
  std::string no_embedder;
  std::mutex embed_mutex;  // one vkf_embed at a time (try_lock: VKF_ERROR_BUSY)
};

struct vkf_session {
  std::shared_ptr<vkf::Context> ctx;
  std::shared_ptr<const vkf::Tokenizer> tokenizer;
  vkf::Session session;
  std::shared_ptr<std::atomic<size_t>> text_limit;  // its model's (vkf_model_set_text_limit)
  mutable std::atomic<bool> busy{false};  // a job or a call runs on it (stats claim it too)
  vkf_job* job = nullptr;         // that job (vkf_session_free ends it)
  // The last generation's outputs (vkf_session_last_tokens), cleared when one starts:
  // written only by the call or job that holds the session.
  std::optional<std::vector<std::vector<uint32_t>>> last;
};

struct vkf_forecaster {
  std::shared_ptr<vkf::Context> ctx;
  std::shared_ptr<const vkf::Forecaster> forecaster;
};

// A generation running on a thread of its own; the caller polls it.
struct vkf_job {
  vkf_session* session = nullptr;
  bool text = false;  // a translation (result as text) or a generation (tokens)
  std::atomic<bool> cancel{false};
  std::mutex mutex;
  std::condition_variable finished_cv;
  bool finished = false;
  vkf_status status = VKF_PENDING;
  std::string error, result_text;
  std::vector<uint32_t> result_tokens;
  std::thread worker;
};

namespace capi {

// A C enum parameter's value as the caller passed it: C callers (and other languages)
// can pass any int, and reading an out-of-range value as the C++ enum type is undefined
// behaviour (UBSan's -fsanitize=enum reports it). The bytes are read as an int instead.
template <class E>
int enum_value(const E& e) {
  static_assert(sizeof(E) == sizeof(int));
  int v;
  std::memcpy(&v, &e, sizeof v);
  return v;
}
  // internal: outside namespace vkf, so the shared library does not export it

extern thread_local std::string last_error;

// Runs f, turning every exception into a status and the thread's last error.
// The status for an Error's kind.
inline vkf_status status_of(vkf::ErrorKind kind) {
  switch (kind) {
    case vkf::ErrorKind::NotFound: return VKF_ERROR_NOT_FOUND;
    case vkf::ErrorKind::InvalidInput: return VKF_ERROR_INVALID_INPUT;
    case vkf::ErrorKind::Unsupported: return VKF_ERROR_UNSUPPORTED;
    case vkf::ErrorKind::OutOfMemory: return VKF_ERROR_OUT_OF_MEMORY;
    case vkf::ErrorKind::DeviceLost: return VKF_ERROR_DEVICE_LOST;
    case vkf::ErrorKind::Cancelled: return VKF_ERROR_CANCELLED;
    case vkf::ErrorKind::Failed: break;
  }
  return VKF_ERROR_FAILED;
}

template <class F>
vkf_status guarded(const char* function, F&& f) {
  try {
    return f();
  } catch (const vkf::Error& e) {
    last_error = std::string(function) + ": " + e.what();
    return status_of(e.kind());
  } catch (const std::bad_alloc&) {
    last_error = std::string(function) + ": out of host memory";
    return VKF_ERROR_OUT_OF_MEMORY;
  } catch (const std::exception& e) {
    last_error = std::string(function) + ": " + e.what();
  } catch (...) {
    last_error = std::string(function) + ": unknown error";
  }
  return VKF_ERROR_FAILED;
}

vkf_status invalid(const char* function, const std::string& why);
vkf_status failed(const char* function, const std::string& why);  // ::VKF_ERROR_FAILED with the message

// The session for one call: a second call (from another thread) or a running job gets a
// clear status instead of racing the first. Released when the call returns.
class SessionClaim {
 public:
  explicit SessionClaim(const vkf_session* s) : session_(s) {
    bool expected = false;
    held_ = session_->busy.compare_exchange_strong(expected, true);
  }
  ~SessionClaim() {
    if (held_) session_->busy = false;
  }
  SessionClaim(const SessionClaim&) = delete;
  SessionClaim& operator=(const SessionClaim&) = delete;
  bool held() const { return held_; }
  vkf_status refuse(const char* function) const {
    last_error = std::string(function) +
                 ": the session is busy: a job or another thread's call is running on it (one call at a time per "
                 "session; give each thread its own session)";
    return VKF_ERROR_BUSY;
  }

 private:
  const vkf_session* session_;
  bool held_ = false;
};

// A source or target length the model can take: at most its max_position, checked
// before anything of that length is allocated.
vkf_status check_length(const char* function, const char* what, size_t length, const vkf_session* session);

// Text a model can read: at most Tokenizer::text_bytes_for(max_position) bytes, checked
// before the tokenizer spends time and memory on it (VKF_ERROR_INVALID_INPUT naming the limit).
vkf_status check_text(const char* function, const char* text, const vkf::Tokenizer& tokenizer,
                      const vkf::ModelConfig& config, size_t limit);

// n x m elements as a size, or nullopt when the product does not fit.
std::optional<size_t> product(size_t n, size_t m);
// A result that does not fit the caller's buffer: "<function>: <needs>, the buffer holds N".
vkf_status too_small(const char* function, const std::string& needs, size_t capacity, bool has_buffer);
// Copies s with its NUL into out[capacity] when it fits; reports the size needed.
vkf_status copy_string(const char* function, const std::string& s, char* out, size_t capacity, size_t* needed);
// A field of a C struct, for checking a caller's struct_size against the layout.
struct Field {
  size_t offset, size;
};
#define VKF_FIELD(type, field) (capi::Field{offsetof(type, field), sizeof(((type*)nullptr)->field)})

// A caller's struct_size: from the struct's first published size (its fields as the
// oldest vkformer.h declared them) to the current one, ending between two fields, never
// inside one. The message names the struct and the sizes it takes.
bool struct_size_ok(const char* function, const char* type, uint32_t size, size_t first, size_t current,
                    std::initializer_list<Field> fields);
// An input struct as the library reads it: the caller's `size` bytes over the defaults
// (fields past them keep their defaults), struct_size set to the current size.
template <class T>
T widened(const T& caller, uint32_t size, T defaults) {
  std::memcpy(&defaults, &caller, std::min<size_t>(size, sizeof(T)));
  defaults.struct_size = sizeof(T);
  return defaults;
}
// An output struct written for the caller: its struct_size and the fields within it.
template <class T>
void narrowed(const T& full, T* caller) {
  const uint32_t size = caller->struct_size;
  std::memcpy(reinterpret_cast<char*>(caller) + sizeof(uint32_t), reinterpret_cast<const char*>(&full) + sizeof(uint32_t),
              std::min<size_t>(size, sizeof(T)) - sizeof(uint32_t));
}
// The first published sizes: each struct as the oldest vkformer.h that had it laid it out
// (ABI 1's vkf_generate_options ended at seed, its vkf_context_options at validation).
constexpr size_t kFirstGenerateOptionsSize = offsetof(vkf_generate_options, submit_budget_ms);
constexpr size_t kFirstContextOptionsSize = offsetof(vkf_context_options, memory_limit);
constexpr size_t kFirstGenerateStatsSize = offsetof(vkf_generate_stats, prompt_tokens);
bool generate_options_size_ok(const char* function, uint32_t size);

// vkf_job_free or vkf_session_free from the job's own on_token: a no-op, said in the
// thread's last error and as a warning through the context's log.
void refuse_from_callback(const char* function, const vkf_session* session);

// Session::generate on the session (which the caller holds), keeping the outputs as its
// last result (vkf_session_last_tokens) and ending each output's stream (g.finish).
struct Generation;
const std::vector<std::vector<uint32_t>>& run(vkf_session* session, const std::vector<std::vector<uint32_t>>& sources,
                                              const Generation& g);
// Output `output` of the session's last result, or an error naming why there is none.
vkf_status last_output(const char* function, const vkf_session* session, size_t output,
                       const std::vector<uint32_t>** out);

// A generation from C: the C options as the C++ ones, and what ends each output's stream.
struct Generation {
  vkf::GenerateOptions options;
  // After a generation that returned: each output's last on_token call (VKF_TOKEN_END
  // and the rest of its text). Empty without on_token.
  std::function<void(size_t outputs)> finish;
};
// The C options as the C++ ones (NULL: the defaults); struct_size is any published size.
// max_new_tokens 0: the model's default for a longest source or prompt of
// `longest_source` tokens (GenerateOptions::defaults). With o->on_token, the C callback
// wrapped: each output's pieces through `tokenizer` (none: NULL pieces), a nonzero return
// ending that output (GenerateOptions::stop).
std::optional<Generation> generate_options(const vkf_generate_options* o, const vkf::ModelConfig& c,
                                           const char* function,
                                           const std::shared_ptr<const vkf::Tokenizer>& tokenizer,
                                           size_t longest_source);

}  // namespace capi
