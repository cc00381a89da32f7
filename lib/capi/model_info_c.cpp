// The C API's model facts and tokenizer (include/vkformer/vkformer.h): what a loaded model
// is, and its tokenizer's ids and text, so an app sizes its buffers and feeds it text.
#include <cstdio>

#include "handles.hpp"

using capi::copy_string;
using capi::guarded;
using capi::invalid;
using capi::too_small;

extern "C" {

vkf_status vkf_model_info_get(const vkf_model* model, vkf_model_info* info) {
  const char* fn = "vkf_model_info_get";
  if (!model) return invalid(fn, "model is NULL");
  if (!info) return invalid(fn, "info is NULL");
  // Its first published layout is this one; fields added later are written only to a
  // caller whose struct_size holds them.
  if (!capi::struct_size_ok(fn, "vkf_model_info", info->struct_size, sizeof(vkf_model_info), sizeof(vkf_model_info), {}))
    return VKF_ERROR_INVALID_ARGUMENT;
  return guarded(fn, [&] {
    const vkf::ModelConfig& c = model->model->config();
    vkf_model_info out{};
    out.struct_size = sizeof(vkf_model_info);
    std::snprintf(out.architecture, sizeof out.architecture, "%s", c.architecture.c_str());
    out.decoder_only = c.kind == vkf::ModelKind::DecoderOnly ? 1 : 0;  // (derived: the C ABI keeps its field)
    out.has_tokenizer = model->tokenizer ? 1 : 0;
    out.source_vocab_size = c.src_vocab_size;
    out.target_vocab_size = c.tgt_vocab_size;
    out.max_positions = c.max_position;
    out.bos_id = c.bos_id;
    out.eos_id = c.eos_id;
    out.pad_id = c.pad_id;
    out.d_model = c.d_model;
    out.layers = c.num_encoder_layers + c.num_decoder_layers;
    out.heads = c.nhead;
    out.kv_heads = c.kv_head_count();
    out.default_num_beams = c.generation.num_beams;
    out.default_length_penalty = c.generation.length_penalty;
    out.default_repetition_penalty = c.generation.repetition_penalty;
    capi::narrowed(out, info);
    return VKF_OK;
  });
}

vkf_status vkf_tokenize(const vkf_model* model, const char* text, uint32_t* ids, size_t capacity, size_t* count) {
  const char* fn = "vkf_tokenize";
  if (count) *count = 0;
  if (!model) return invalid(fn, "model is NULL");
  if (!text) return invalid(fn, "text is NULL");
  if (!count) return invalid(fn, "count is NULL");
  if (!model->tokenizer)
    return capi::failed(fn, model->where + " " + model->no_tokenizer + ": give ids to vkf_generate");
  return guarded(fn, [&] {
    if (const vkf_status s = capi::check_text(fn, text, *model->tokenizer, model->model->config(), model->text_limit->load());
        s != VKF_OK)
      return s;
    const std::vector<uint32_t> out = model->tokenizer->encode(text);  // not UTF-8: VKF_ERROR_INVALID_INPUT
    *count = out.size();
    if (!ids || capacity < out.size())
      return too_small(fn, "the text is " + std::to_string(out.size()) + " ids", capacity, ids);
    std::copy(out.begin(), out.end(), ids);
    return VKF_OK;
  });
}

vkf_status vkf_detokenize(const vkf_model* model, const uint32_t* ids, size_t count, char* text, size_t capacity,
                          size_t* needed) {
  const char* fn = "vkf_detokenize";
  if (needed) *needed = 0;
  if (!model) return invalid(fn, "model is NULL");
  if (!ids && count) return invalid(fn, "ids is NULL");
  if (!model->tokenizer)
    return capi::failed(fn, model->where + " " + model->no_tokenizer);
  const size_t size = model->tokenizer->size();
  for (size_t i = 0; i < count; ++i)
    if (ids[i] >= size)
      return invalid(fn, "ids[" + std::to_string(i) + "] is " + std::to_string(ids[i]) + ", outside the tokenizer's " +
                             std::to_string(size) + " tokens");
  return guarded(fn, [&] {
    return copy_string(fn, model->tokenizer->decode(std::vector<uint32_t>(ids, ids + count)), text, capacity, needed);
  });
}

}  // extern "C"
