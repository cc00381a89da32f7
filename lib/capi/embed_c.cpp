// The C API's sentence embeddings (include/vkformer/vkformer.h): vkf_embed over the
// model's Embedder, made when it was loaded.
#include "handles.hpp"

using capi::guarded;
using capi::invalid;

namespace {

constexpr size_t kFirstEmbedOptionsSize = sizeof(vkf_embed_options);  // ABI 7's layout

vkf_status no_embedder(const char* fn, const vkf_model* model) {
  return guarded(fn, [&]() -> vkf_status {
    throw vkf::Error(model->where + " " + model->no_embedder, vkf::ErrorKind::Unsupported);
  });
}

}  // namespace

extern "C" {

vkf_embed_options vkf_embed_options_default(void) {
  vkf_embed_options o{};
  o.struct_size = sizeof(vkf_embed_options);
  o.batch_size = 32;
  return o;
}

vkf_status vkf_embedding_width(const vkf_model* model, uint32_t* width) {
  const char* fn = "vkf_embedding_width";
  if (!model) return invalid(fn, "model is NULL");
  if (!width) return invalid(fn, "width is NULL");
  if (!model->embedder) return no_embedder(fn, model);
  *width = model->embedder->config().width;
  return VKF_OK;
}

vkf_status vkf_embed(vkf_model* model, const char* const* texts, size_t count, const vkf_embed_options* options,
                     float* embeddings, size_t capacity, size_t* needed) {
  const char* fn = "vkf_embed";
  if (!model) return invalid(fn, "model is NULL");
  if (count && !texts) return invalid(fn, "texts is NULL");
  if (capacity && !embeddings) return invalid(fn, "embeddings is NULL with a capacity");
  if (options && !capi::struct_size_ok(fn, "vkf_embed_options", options->struct_size, kFirstEmbedOptionsSize,
                                       sizeof(vkf_embed_options), {}))
    return VKF_ERROR_INVALID_ARGUMENT;
  const vkf_embed_options o =
      options ? capi::widened(*options, options->struct_size, vkf_embed_options_default()) : vkf_embed_options_default();
  if (o.batch_size < 1 || o.batch_size > 4096)
    return invalid(fn, "vkf_embed_options.batch_size must be 1 to 4096, not " + std::to_string(o.batch_size));
  for (size_t i = 0; i < count; ++i)
    if (!texts[i]) return invalid(fn, "texts[" + std::to_string(i) + "] is NULL");
  if (!model->embedder) return no_embedder(fn, model);
  const uint32_t width = model->embedder->config().width;
  const std::optional<size_t> floats = capi::product(count, width);
  if (!floats) return invalid(fn, "count x width does not fit a size_t");
  if (needed) *needed = *floats;
  if (capacity < *floats)
    return capi::too_small(fn, std::to_string(count) + " embeddings of " + std::to_string(width) + " floats", capacity,
                           embeddings != nullptr);
  std::unique_lock lock(model->embed_mutex, std::try_to_lock);
  if (!lock.owns_lock()) {
    capi::last_error = std::string(fn) + ": another thread is embedding with this model (one call at a time per model)";
    return VKF_ERROR_BUSY;
  }
  return guarded(fn, [&] {
    const size_t limit = model->text_limit->load();
    std::vector<std::string> list;
    list.reserve(count);
    for (size_t i = 0; i < count; ++i) {
      const size_t n = limit ? strnlen(texts[i], limit + 1) : std::strlen(texts[i]);
      if (limit && n > limit)
        vkf::fail_invalid_input("text " + std::to_string(i) + " is longer than the model's text limit of " +
                                std::to_string(limit) + " bytes (vkf_model_set_text_limit)");
      list.emplace_back(texts[i], n);
    }
    model->embedder->batch_size = o.batch_size;
    const vkf::Embeddings e = model->embedder->embed(list);
    std::copy(e.values.begin(), e.values.end(), embeddings);
    return VKF_OK;
  });
}

}  // extern "C"
