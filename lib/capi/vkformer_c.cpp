// The C API (include/vkformer/vkformer.h) over the C++ one: devices, contexts, models,
// sessions and their generation. Every entry point catches everything: no exception
// crosses into C, failures become a status and a message. Loading models
// (model_load_c.cpp), jobs (jobs_c.cpp), model facts and the tokenizer (model_info_c.cpp),
// the options (generate_options_c.cpp), a session's results (session_results_c.cpp) and
// the forecaster (forecaster_c.cpp) live beside it.
#include <cmath>
#include <cstring>

#include "handles.hpp"

namespace capi {

thread_local std::string last_error;

vkf_status invalid(const char* function, const std::string& why) {
  last_error = std::string(function) + ": " + why;
  return VKF_ERROR_INVALID_ARGUMENT;
}

vkf_status failed(const char* function, const std::string& why) {
  last_error = std::string(function) + ": " + why;
  return VKF_ERROR_FAILED;
}

vkf_status check_text(const char* function, const char* text, const vkf::Tokenizer& tokenizer,
                      const vkf::ModelConfig& config, size_t limit) {
  const size_t most = limit ? limit : tokenizer.text_bytes_for(config.max_position);
  const size_t length = strnlen(text, most + 1);  // never reads past what could be used
  if (length <= most) return VKF_OK;
  last_error = std::string(function) + ": the text is longer than " + std::to_string(most) + " bytes, " +
               (limit ? std::string("the limit vkf_model_set_text_limit set")
                      : "what a model of " + std::to_string(config.max_position) +
                            " positions can read with this tokenizer (its longest token times the positions)") +
               ": cut it first";
  return VKF_ERROR_INVALID_INPUT;
}

std::optional<size_t> product(size_t n, size_t m) {
  if (m != 0 && n > SIZE_MAX / m) return std::nullopt;
  return n * m;
}

vkf_status too_small(const char* function, const std::string& needs, size_t capacity, bool has_buffer) {
  last_error = std::string(function) + ": " + needs + ", the buffer holds " + std::to_string(has_buffer ? capacity : 0);
  return VKF_ERROR_BUFFER_TOO_SMALL;
}

vkf_status copy_string(const char* function, const std::string& s, char* out, size_t capacity, size_t* needed) {
  if (needed) *needed = s.size() + 1;
  if (!out || capacity < s.size() + 1)
    return too_small(function, "the result needs " + std::to_string(s.size() + 1) + " bytes", capacity, out);
  std::memcpy(out, s.c_str(), s.size() + 1);
  return VKF_OK;
}

vkf_status check_length(const char* function, const char* what, size_t length, const vkf_session* session) {
  const uint32_t most = session->session.model().config().max_position;
  if (length > most)
    return invalid(function, std::string(what) + " " + std::to_string(length) + " is longer than the model's " +
                                 std::to_string(most) + " positions (max_position)");
  return VKF_OK;
}

void refuse_from_callback(const char* function, const vkf_session* session) {
  last_error = std::string(function) +
               ": called from the job's own on_token, where the job and its session are in use: nothing was freed "
               "(free them once the job has ended, from any other thread)";
  if (session) session->ctx->log(vkf::LogLevel::Warning, last_error);
}

bool struct_size_ok(const char* function, const char* type, uint32_t size, size_t first, size_t current,
                    std::initializer_list<Field> fields) {
  bool between_fields = size >= first && size <= current;
  for (const Field& f : fields)
    if (f.offset < size && f.offset + f.size > size) between_fields = false;
  if (!between_fields)
    invalid(function, std::string(type) + ".struct_size is " + std::to_string(size) + ": it takes sizes from " +
                          std::to_string(first) + " (its first published layout) to " + std::to_string(current) +
                          " (this library's), ending between two fields (set it to sizeof(" + type + "))");
  return between_fields;
}

}  // namespace capi

namespace {

// The app's C callback as the context's log sink.
vkf::LogSink c_log_sink(vkf_log_callback log, void* user) {
  return [log, user](vkf::LogLevel level, std::string_view message) {
    const std::string text(message);  // NUL-terminated for C
    log(user, vkf_log_level(int(level)), text.c_str());
  };
}

}  // namespace

using capi::copy_string;
using capi::generate_options;
using capi::guarded;
using capi::invalid;
using capi::last_error;
using capi::too_small;

extern "C" {

const char* vkf_version(void) { return vkf::version(); }
int vkf_abi_version(void) { return VKF_ABI_VERSION; }
const char* vkf_last_error(void) { return last_error.c_str(); }

vkf_status vkf_device_count(uint32_t* count) {
  if (!count) return invalid("vkf_device_count", "count is NULL");
  return guarded("vkf_device_count", [&] {
    *count = uint32_t(vkf::list_devices().size());
    return VKF_OK;
  });
}

vkf_status vkf_device_name(uint32_t index, char* name, size_t capacity, size_t* needed) {
  return guarded("vkf_device_name", [&] {
    const auto devices = vkf::list_devices();
    if (index >= devices.size())
      return invalid("vkf_device_name", "device " + std::to_string(index) + " does not exist (there are " +
                                            std::to_string(devices.size()) + ")");
    return copy_string("vkf_device_name", devices[index].name, name, capacity, needed);
  });
}

vkf_context_options vkf_context_options_default(void) {
  vkf_context_options o{};
  o.struct_size = sizeof o;
  o.validation = -1;
  o.within_heap_budget = 1;
  return o;
}

vkf_status vkf_context_create(const vkf_context_options* options, vkf_context** context) {
  if (!context) return invalid("vkf_context_create", "context is NULL");
  *context = nullptr;
  using O = vkf_context_options;
  if (options && !capi::struct_size_ok("vkf_context_create", "vkf_context_options", options->struct_size,
                                       capi::kFirstContextOptionsSize, sizeof(O),
                                       {VKF_FIELD(O, struct_size), VKF_FIELD(O, device), VKF_FIELD(O, validation),
                                        VKF_FIELD(O, memory_limit), VKF_FIELD(O, within_heap_budget),
                                        VKF_FIELD(O, cache_dir), VKF_FIELD(O, log), VKF_FIELD(O, log_user)}))
    return VKF_ERROR_INVALID_ARGUMENT;
  const O widened = options ? capi::widened(*options, options->struct_size, vkf_context_options_default()) : O{};
  if (options) options = &widened;
  return guarded("vkf_context_create", [&] {
    vkf::ContextOptions o;
    if (options && options->device) o.device = options->device;
    if (options && options->validation >= 0) o.validation = options->validation != 0;
    if (options) {
      o.memory_limit = options->memory_limit;
      o.within_heap_budget = options->within_heap_budget != 0;
      if (options->cache_dir) {
        if (std::string(options->cache_dir) == "off") o.disk_cache = false;
        else o.cache_dir = options->cache_dir;
      }
      if (options->log) o.log = c_log_sink(options->log, options->log_user);
    }
    auto handle = std::make_unique<vkf_context>();
    handle->ctx = std::make_shared<vkf::Context>(o);
    *context = handle.release();
    return VKF_OK;
  });
}

vkf_status vkf_context_create_borrowed(const vkf_borrowed_vulkan* b, vkf_context** context) {
  const char* fn = "vkf_context_create_borrowed";
  if (!context) return invalid(fn, "context is NULL");
  *context = nullptr;
  if (!b) return invalid(fn, "borrowed is NULL");
  // Its first published layout is this one: a later field past a caller's size is zero.
  if (!capi::struct_size_ok(fn, "vkf_borrowed_vulkan", b->struct_size, sizeof(vkf_borrowed_vulkan),
                            sizeof(vkf_borrowed_vulkan), {}))
    return VKF_ERROR_INVALID_ARGUMENT;
  if (b->enabled_extension_count && !b->enabled_extensions)
    return invalid(fn, "enabled_extensions is NULL but enabled_extension_count is not 0");
  if (bool(b->lock_queue) != bool(b->unlock_queue)) return invalid(fn, "give both lock_queue and unlock_queue, or neither");
  return guarded(fn, [&] {
    vkf::BorrowedVulkan v;
    v.instance = b->instance;
    v.api_version = b->api_version;
    v.physical_device = b->physical_device;
    v.device = b->device;
    v.queue_family = b->queue_family;
    v.queue = b->queue;
    v.enabled_features = b->enabled_features;
    for (uint32_t i = 0; i < b->enabled_extension_count; ++i) v.enabled_extensions.emplace_back(b->enabled_extensions[i]);
    v.get_instance_proc_addr = b->get_instance_proc_addr;
    if (b->lock_queue) {
      v.lock_queue = [f = b->lock_queue, user = b->user] { f(user); };
      v.unlock_queue = [f = b->unlock_queue, user = b->user] { f(user); };
    }
    vkf::ContextOptions o;
    o.borrow = std::move(v);
    o.memory_limit = b->memory_limit;
    if (b->log) o.log = c_log_sink(b->log, b->log_user);
    auto handle = std::make_unique<vkf_context>();
    handle->ctx = std::make_shared<vkf::Context>(o);
    *context = handle.release();
    return VKF_OK;
  });
}

void vkf_context_free(vkf_context* context) { delete context; }

vkf_status vkf_context_memory(const vkf_context* context, uint64_t* allocated, uint64_t* peak) {
  if (!context) return invalid("vkf_context_memory", "context is NULL");
  const vkf::MemoryStats m = context->ctx->memory_stats();
  if (allocated) *allocated = m.allocated;
  if (peak) *peak = m.peak;
  return VKF_OK;
}

vkf_status vkf_context_heap_budget(const vkf_context* context, uint64_t* heap_size, uint64_t* budget,
                                   uint64_t* usage) {
  if (!context) return invalid("vkf_context_heap_budget", "context is NULL");
  return guarded("vkf_context_heap_budget", [&] {
    const vkf::HeapBudget b = context->ctx->heap_budget();
    if (heap_size) *heap_size = b.heap_size;
    if (budget) *budget = b.budget;
    if (usage) *usage = b.usage;
    return VKF_OK;
  });
}

vkf_status vkf_context_device_name(const vkf_context* context, char* name, size_t capacity, size_t* needed) {
  if (!context) return invalid("vkf_context_device_name", "context is NULL");
  return copy_string("vkf_context_device_name", context->ctx->capabilities().name, name, capacity, needed);
}

}  // extern "C"

extern "C" {

vkf_status vkf_session_create(vkf_model* model, vkf_session** session) {
  if (!session) return invalid("vkf_session_create", "session is NULL");
  *session = nullptr;
  if (!model) return invalid("vkf_session_create", "model is NULL");
  return guarded("vkf_session_create", [&] {
    *session = new vkf_session{model->ctx, model->tokenizer, vkf::Session(model->model)};
    (*session)->text_limit = model->text_limit;
    return VKF_OK;
  });
}

void vkf_session_free(vkf_session* session) {
  if (!session) return;
  if (session->job && session->job->worker.get_id() == std::this_thread::get_id()) {
    capi::refuse_from_callback("vkf_session_free", session);  // the job runs on it, below this call
    return;
  }
  if (vkf_job* job = session->job) {  // a job still runs on it: end it first (its handle stays valid)
    job->cancel = true;
    if (job->worker.joinable()) job->worker.join();
    job->session = nullptr;
  }
  delete session;
}

vkf_status vkf_session_warmup(vkf_session* session) {
  if (!session) return invalid("vkf_session_warmup", "session is NULL");
  return guarded("vkf_session_warmup", [&] {
    const capi::SessionClaim claim(session);
    if (!claim.held()) return claim.refuse("vkf_session_warmup");
    session->session.warmup();
    return VKF_OK;
  });
}

vkf_warmup_options vkf_warmup_options_default(void) {
  vkf_warmup_options o{};
  o.struct_size = sizeof o;
  return o;
}

vkf_status vkf_session_warmup_with(vkf_session* session, const vkf_warmup_options* options) {
  const char* fn = "vkf_session_warmup_with";
  if (!session) return invalid(fn, "session is NULL");
  if (options && !capi::struct_size_ok(fn, "vkf_warmup_options", options->struct_size, sizeof(vkf_warmup_options),
                                       sizeof(vkf_warmup_options), {}))
    return VKF_ERROR_INVALID_ARGUMENT;
  const vkf_warmup_options o = options ? *options : vkf_warmup_options_default();
  if (!(o.tune_budget_s >= 0) || !std::isfinite(o.tune_budget_s) || o.tune_budget_s > 3600)
    return invalid(fn, "vkf_warmup_options.tune_budget_s must be between 0 and 3600 seconds");
  return guarded(fn, [&] {
    const capi::SessionClaim claim(session);
    if (!claim.held()) return claim.refuse(fn);
    session->session.warmup({.tune_budget_s = o.tune_budget_s});
    return VKF_OK;
  });
}

vkf_generate_options vkf_generate_options_default(void) {
  vkf_generate_options o{};
  o.struct_size = sizeof o;
  o.beam = 1;
  o.length_penalty = 1.0f;
  o.top_p = 1.0f;
  o.submit_budget_ms = 2.0f;
  return o;
}

vkf_status vkf_generate(vkf_session* session, const uint32_t* source, size_t source_length,
                        const vkf_generate_options* options, uint32_t* tokens, size_t capacity, size_t* count) {
  const char* fn = "vkf_generate";
  if (!session) return invalid(fn, "session is NULL");
  if (!source || source_length == 0) return invalid(fn, "the source is empty (or NULL)");
  if (!count) return invalid(fn, "count is NULL");
  return guarded(fn, [&] {
    const capi::SessionClaim claim(session);
    if (!claim.held()) return claim.refuse(fn);
    if (const vkf_status s = capi::check_length(fn, "source_length", source_length, session); s != VKF_OK) return s;
    const auto g = generate_options(options, session->session.model().config(), fn, session->tokenizer, source_length);
    if (!g) return VKF_ERROR_INVALID_ARGUMENT;
    const auto& out = capi::run(session, {std::vector<uint32_t>(source, source + source_length)}, *g)[0];
    *count = out.size();
    if (!tokens || capacity < out.size())
      return too_small(fn, std::to_string(out.size()) + " tokens were generated", capacity, tokens);
    std::copy(out.begin(), out.end(), tokens);
    return VKF_OK;
  });
}

vkf_status vkf_generate_batch(vkf_session* session, const uint32_t* const* sources, const size_t* lengths, size_t batch,
                              const vkf_generate_options* options, uint32_t* tokens, size_t capacity, size_t* counts,
                              size_t* total) {
  const char* fn = "vkf_generate_batch";
  if (total) *total = 0;
  if (!session) return invalid(fn, "session is NULL");
  if (batch == 0 || !sources || !lengths) return invalid(fn, "no sources (batch 0, or sources or lengths NULL)");
  if (batch > vkf::GenerateOptions::kMaxSources)
    return invalid(fn, "batch " + std::to_string(batch) + " is more than " +
                           std::to_string(vkf::GenerateOptions::kMaxSources) + " sources in one call");
  if (!counts || !total) return invalid(fn, "counts or total is NULL");
  for (size_t i = 0; i < batch; ++i)
    if (!sources[i] || lengths[i] == 0) return invalid(fn, "source " + std::to_string(i) + " is empty (or NULL)");
  return guarded(fn, [&] {
    const capi::SessionClaim claim(session);
    if (!claim.held()) return claim.refuse(fn);
    std::vector<std::vector<uint32_t>> in;
    size_t longest = 0;
    for (size_t i = 0; i < batch; ++i) {
      if (const vkf_status s = capi::check_length(fn, "a source's length", lengths[i], session); s != VKF_OK) return s;
      in.emplace_back(sources[i], sources[i] + lengths[i]);
      longest = std::max(longest, lengths[i]);
    }
    const auto g = generate_options(options, session->session.model().config(), fn, session->tokenizer, longest);
    if (!g) return VKF_ERROR_INVALID_ARGUMENT;
    const auto& out = capi::run(session, in, *g);
    size_t sum = 0;
    for (size_t i = 0; i < batch; ++i) sum += out[i].size();
    *total = sum;
    for (size_t i = 0; i < batch; ++i) counts[i] = out[i].size();
    if (!tokens || capacity < sum) return too_small(fn, std::to_string(sum) + " tokens were generated", capacity, tokens);
    for (const auto& o1 : out) tokens = std::copy(o1.begin(), o1.end(), tokens);
    return VKF_OK;
  });
}

vkf_status vkf_translate(vkf_session* session, const char* text, const vkf_generate_options* options, char* out,
                         size_t capacity, size_t* needed) {
  const char* fn = "vkf_translate";
  if (!session) return invalid(fn, "session is NULL");
  if (!text) return invalid(fn, "text is NULL");
  if (!session->tokenizer) return invalid(fn, "the model has no tokenizer (vkf_model_info.has_tokenizer is 0): use vkf_generate with token ids");
  return guarded(fn, [&] {
    const capi::SessionClaim claim(session);
    if (!claim.held()) return claim.refuse(fn);
    if (options && !capi::generate_options_size_ok(fn, options->struct_size)) return VKF_ERROR_INVALID_ARGUMENT;
    if (const vkf_status s = capi::check_text(fn, text, *session->tokenizer, session->session.model().config(),
                                              session->text_limit->load());
        s != VKF_OK)
      return s;
    const auto ids = session->tokenizer->encode(text);
    if (ids.empty()) return invalid(fn, "the text is empty");
    const auto g = generate_options(options, session->session.model().config(), fn, session->tokenizer, ids.size());
    if (!g) return VKF_ERROR_INVALID_ARGUMENT;
    const auto& result = capi::run(session, {ids}, *g)[0];
    return copy_string(fn, session->tokenizer->decode(result), out, capacity, needed);
  });
}

vkf_status vkf_score(vkf_session* session, const uint32_t* source, size_t source_length, const uint32_t* target,
                     size_t target_length, float* logits, size_t capacity, size_t* count) {
  const char* fn = "vkf_score";
  if (!session) return invalid(fn, "session is NULL");
  if (!source || source_length == 0) return invalid(fn, "the source is empty (or NULL)");
  if (!target || target_length == 0) return invalid(fn, "the target is empty (or NULL); it starts with BOS");
  if (!count) return invalid(fn, "count is NULL");
  return guarded(fn, [&] {
    const capi::SessionClaim claim(session);
    if (!claim.held()) return claim.refuse(fn);
    // Lengths first: a target longer than the model's positions could also overflow the
    // count below, which would then pass the capacity check.
    if (const vkf_status s = capi::check_length(fn, "source_length", source_length, session); s != VKF_OK) return s;
    if (const vkf_status s = capi::check_length(fn, "target_length", target_length, session); s != VKF_OK) return s;
    const size_t vocabulary = session->session.model().config().tgt_vocab_size;
    const auto logits_count = capi::product(target_length, vocabulary);
    if (!logits_count) return invalid(fn, "target_length x the vocabulary does not fit in a size_t");
    *count = *logits_count;
    if (!logits || capacity < *count)  // checked before the work, which the caller would have to repeat
      return too_small(fn, "the logits take " + std::to_string(*count) + " floats (" + std::to_string(target_length) +
                               " x " + std::to_string(vocabulary) + ")",
                       capacity, logits);
    const auto out = session->session.score(std::vector<uint32_t>(source, source + source_length),
                                            std::vector<uint32_t>(target, target + target_length));
    std::copy(out.begin(), out.end(), logits);
    return VKF_OK;
  });
}

}  // extern "C"
