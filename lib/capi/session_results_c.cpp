// The C API's results of a session's last generation: its counters (vkf_session_stats)
// and its outputs kept for a caller whose buffer was too small (vkf_session_last_tokens,
// vkf_session_last_text), and the one place a generation from C runs and keeps them.
#include "handles.hpp"

using capi::copy_string;
using capi::guarded;
using capi::invalid;
using capi::too_small;

namespace capi {

const std::vector<std::vector<uint32_t>>& run(vkf_session* session, const std::vector<std::vector<uint32_t>>& sources,
                                              const Generation& g) {
  session->last.reset();
  auto out = session->session.generate(sources, g.options);
  session->last = std::move(out);
  if (g.finish) g.finish(session->last->size());
  return *session->last;
}

vkf_status last_output(const char* function, const vkf_session* session, size_t output,
                       const std::vector<uint32_t>** out) {
  if (!session->last)
    return invalid(function, "the session has no result: no generation has run on it, or the last one failed");
  if (output >= session->last->size())
    return invalid(function, "output " + std::to_string(output) + " is past the last generation's " +
                                 std::to_string(session->last->size()) + " output(s)");
  *out = &(*session->last)[output];
  return VKF_OK;
}

}  // namespace capi

extern "C" {

vkf_status vkf_session_stats(const vkf_session* session, vkf_generate_stats* stats) {
  const char* fn = "vkf_session_stats";
  if (!session) return invalid(fn, "session is NULL");
  if (!stats) return invalid(fn, "stats is NULL");
  using S = vkf_generate_stats;
  if (!capi::struct_size_ok(fn, "vkf_generate_stats", stats->struct_size, capi::kFirstGenerateStatsSize, sizeof(S),
                            {VKF_FIELD(S, struct_size), VKF_FIELD(S, encode_ms), VKF_FIELD(S, decode_ms),
                             VKF_FIELD(S, tokens), VKF_FIELD(S, submits), VKF_FIELD(S, recordings),
                             VKF_FIELD(S, dispatches), VKF_FIELD(S, dispatches_per_decoder_layer),
                             VKF_FIELD(S, prompt_tokens), VKF_FIELD(S, prompt_ms), VKF_FIELD(S, decode_tokens)}))
    return VKF_ERROR_INVALID_ARGUMENT;
  const capi::SessionClaim claim(session);
  if (!claim.held()) return claim.refuse(fn);
  const vkf::GenerateStats& g = session->session.last_stats();
  S out{};
  out.encode_ms = g.encode_ms;
  out.decode_ms = g.decode_ms;
  out.tokens = g.tokens;
  out.submits = g.submits;
  out.recordings = g.recordings;
  out.dispatches = g.dispatches;
  out.dispatches_per_decoder_layer = g.dispatches_per_decoder_layer;
  out.prompt_tokens = g.prompt_tokens;
  out.prompt_ms = g.prompt_ms;
  out.decode_tokens = g.decode_tokens;
  capi::narrowed(out, stats);
  return VKF_OK;
}

vkf_status vkf_session_last_tokens(const vkf_session* session, size_t output, uint32_t* tokens, size_t capacity,
                                   size_t* count) {
  const char* fn = "vkf_session_last_tokens";
  if (count) *count = 0;
  if (!session) return invalid(fn, "session is NULL");
  if (!count) return invalid(fn, "count is NULL");
  const capi::SessionClaim claim(session);
  if (!claim.held()) return claim.refuse(fn);
  const std::vector<uint32_t>* out = nullptr;
  if (const vkf_status s = capi::last_output(fn, session, output, &out); s != VKF_OK) return s;
  *count = out->size();
  if (!tokens || capacity < out->size())
    return too_small(fn, std::to_string(out->size()) + " tokens were generated", capacity, tokens);
  std::copy(out->begin(), out->end(), tokens);
  return VKF_OK;
}

vkf_status vkf_session_last_text(const vkf_session* session, size_t output, char* text, size_t capacity,
                                 size_t* needed) {
  const char* fn = "vkf_session_last_text";
  if (needed) *needed = 0;
  if (!session) return invalid(fn, "session is NULL");
  if (!session->tokenizer) return capi::failed(fn, "the model has no tokenizer: fetch the ids (vkf_session_last_tokens)");
  return guarded(fn, [&] {
    const capi::SessionClaim claim(session);
    if (!claim.held()) return claim.refuse(fn);
    const std::vector<uint32_t>* out = nullptr;
    if (const vkf_status s = capi::last_output(fn, session, output, &out); s != VKF_OK) return s;
    return copy_string(fn, session->tokenizer->decode(*out), text, capacity, needed);
  });
}



uint64_t vkf_blocking_waits_on_this_thread(void) { return vkf::blocking_waits_on_this_thread(); }

}  // extern "C"
