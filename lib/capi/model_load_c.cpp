// The C API's model loading (include/vkformer/vkformer.h): from a directory or from files
// the app holds in memory, in a precision or with weights in llama.cpp's blocks
// (vkf_load_options), with the tokenizer where the files hold its family's.
#include <iterator>

#include "handles.hpp"

using capi::guarded;
using capi::invalid;

namespace {

// vkf_model_load and vkf_model_load_from_memory after their own checks: the model, and
// its tokenizer where the files hold one (vocab.json; a decoder-only model's tokenizer.json).
vkf_status load_model(const char* fn, vkf_context* context, const vkf::ModelFiles& files, const vkf::LoadOptions& options,
                      vkf_model** model) {
  return guarded(fn, [&] {
    auto handle = std::make_unique<vkf_model>();
    handle->ctx = context->ctx;
    handle->where = files.describe();
    handle->model = vkf::Model::load(*context->ctx, files, options);
    // A tokenizer where the directory has its family's files (one malformed is an error);
    // none there: the model takes ids, and calls that need text say which files.
    std::string names;
    bool present = false;
    for (const std::string& name : vkf::Tokenizer::files_for_model(files)) {
      present = present || files.has(name);
      names += (names.empty() ? "" : " or ") + name;
    }
    if (present && files.gguf()) {
      // A GGUF file's tokenizer of a kind vkformer does not read: the model takes ids, and
      // calls that need text say why.
      try {
        handle->tokenizer = vkf::Tokenizer::for_model(files);
      } catch (const vkf::Error& e) {
        if (e.kind() != vkf::ErrorKind::Unsupported) throw;
        handle->no_tokenizer = std::string("has a tokenizer vkformer does not read: ") + e.what();
      }
    } else if (present) {
      handle->tokenizer = vkf::Tokenizer::for_model(files);
    } else {
      handle->no_tokenizer = "has no tokenizer (" + (names.empty() ? std::string("its family has none") : names) + ")";
    }
    if (handle->model->config().kind != vkf::ModelKind::EncoderOnly) {
      handle->no_embedder = std::string("is ") + handle->model->config().kind_name() +
                            ": sentence embeddings come from encoder-only models (BERT)";
    } else if (!handle->tokenizer) {
      handle->no_embedder = handle->no_tokenizer + ", so it embeds no text";
    } else {
      try {
        handle->embedder = std::make_unique<vkf::Embedder>(handle->model, files);
      } catch (const vkf::Error& e) {
        if (e.kind() != vkf::ErrorKind::Unsupported) throw;  // a malformed file fails the load
        handle->no_embedder = e.what();
      }
    }
    *model = handle.release();
    return VKF_OK;
  });
}

bool valid_precision(int precision) { return precision == VKF_PRECISION_FP32 || precision == VKF_PRECISION_FP16; }
vkf::DType dtype_of(int precision) { return precision == VKF_PRECISION_FP16 ? vkf::DType::F16 : vkf::DType::F32; }

// The options as Model::load takes them, or false (an error set) for a struct_size or value
// out of range.
bool load_options(const char* fn, const vkf_load_options* options, vkf::LoadOptions& out) {
  if (options && !capi::struct_size_ok(fn, "vkf_load_options", options->struct_size, sizeof(vkf_load_options),
                                       sizeof(vkf_load_options), {}))
    return false;
  const vkf_load_options o = options ? *options : vkf_load_options_default();
  if (!valid_precision(capi::enum_value(o.precision))) {
    invalid(fn, "vkf_load_options.precision must be VKF_PRECISION_FP32 or VKF_PRECISION_FP16");
    return false;
  }
  using vkf::BlockType;
  static const std::optional<BlockType> kWeights[] = {std::nullopt,     BlockType::Q8_0, BlockType::Q4_0,
                                                      BlockType::Q4_1,  BlockType::Q5_0, BlockType::Q5_1,
                                                      BlockType::Q4_K,  BlockType::Q5_K, BlockType::Q6_K};
  const int w = capi::enum_value(o.weights);
  if (w < 0 || w > VKF_WEIGHTS_Q5_K_M) {
    invalid(fn, "vkf_load_options.weights must be VKF_WEIGHTS_PRECISION or one of VKF_WEIGHTS_Q8_0 .. VKF_WEIGHTS_Q5_K_M, not " +
                    std::to_string(w));
    return false;
  }
  out = {.precision = dtype_of(capi::enum_value(o.precision))};
  if (w < int(std::size(kWeights))) out.weights = kWeights[w];
  else out.mix = w == VKF_WEIGHTS_Q4_K_M ? vkf::BlockMix::Q4_K_M : vkf::BlockMix::Q5_K_M;
  return true;
}

// vkf_model_load_from_memory and its _with twin after their options' checks.
vkf_status load_from_memory(const char* fn, vkf_context* context, const vkf_memory_file* files, size_t count,
                            const vkf::LoadOptions& options, vkf_model** model) {
  if (!model) return invalid(fn, "model is NULL");
  if (!context) return invalid(fn, "context is NULL");
  if (!files || count == 0) return invalid(fn, "no files (files NULL or count 0): give config.json and the weights at least");
  // A model directory holds a dozen files; a count far beyond is a wrong argument, not a model.
  constexpr size_t kMostFiles = 4096;
  if (count > kMostFiles)
    return invalid(fn, "count " + std::to_string(count) + " is more than the " + std::to_string(kMostFiles) +
                           " files a model may have");
  std::vector<vkf::ModelFiles::File> list;
  for (size_t i = 0; i < count; ++i) {
    const vkf_memory_file& f = files[i];
    if (!f.name) return invalid(fn, "files[" + std::to_string(i) + "].name is NULL");
    if (!f.data && f.size) return invalid(fn, std::string("files[") + std::to_string(i) + "] (" + f.name + "): data is NULL");
    list.push_back({f.name, std::string_view(static_cast<const char*>(f.data), f.size)});
  }
  return guarded(fn, [&] {
    const vkf::ModelFiles in_memory = vkf::ModelFiles::in_memory(list);  // names checked: VKF_ERROR_INVALID_INPUT
    return load_model(fn, context, in_memory, options, model);
  });
}

}  // namespace

extern "C" {

vkf_status vkf_model_load(vkf_context* context, const char* directory, vkf_precision precision, vkf_model** model) {
  const char* fn = "vkf_model_load";
  if (!model) return invalid(fn, "model is NULL");
  *model = nullptr;
  if (!context) return invalid(fn, "context is NULL");
  if (!directory) return invalid(fn, "directory is NULL");
  if (!valid_precision(capi::enum_value(precision)))
    return invalid(fn, "precision must be VKF_PRECISION_FP32 or VKF_PRECISION_FP16");
  return load_model(fn, context, vkf::ModelFiles(directory), {.precision = dtype_of(capi::enum_value(precision))}, model);
}

vkf_load_options vkf_load_options_default(void) {
  vkf_load_options o{};
  o.struct_size = sizeof o;
  o.precision = VKF_PRECISION_FP32;
  o.weights = VKF_WEIGHTS_PRECISION;
  return o;
}

vkf_status vkf_model_load_with(vkf_context* context, const char* directory, const vkf_load_options* options,
                               vkf_model** model) {
  const char* fn = "vkf_model_load_with";
  if (!model) return invalid(fn, "model is NULL");
  *model = nullptr;
  if (!context) return invalid(fn, "context is NULL");
  if (!directory) return invalid(fn, "directory is NULL");
  vkf::LoadOptions o;
  if (!load_options(fn, options, o)) return VKF_ERROR_INVALID_ARGUMENT;
  return load_model(fn, context, vkf::ModelFiles(directory), o, model);
}

vkf_status vkf_model_load_from_memory(vkf_context* context, const vkf_memory_file* files, size_t count,
                                      vkf_precision precision, vkf_model** model) {
  const char* fn = "vkf_model_load_from_memory";
  if (model) *model = nullptr;
  if (!valid_precision(capi::enum_value(precision)))
    return invalid(fn, "precision must be VKF_PRECISION_FP32 or VKF_PRECISION_FP16");
  return load_from_memory(fn, context, files, count, {.precision = dtype_of(capi::enum_value(precision))}, model);
}

vkf_status vkf_model_load_from_memory_with(vkf_context* context, const vkf_memory_file* files, size_t count,
                                           const vkf_load_options* options, vkf_model** model) {
  const char* fn = "vkf_model_load_from_memory_with";
  if (model) *model = nullptr;
  vkf::LoadOptions o;
  if (!load_options(fn, options, o)) return VKF_ERROR_INVALID_ARGUMENT;
  return load_from_memory(fn, context, files, count, o, model);
}

void vkf_model_free(vkf_model* model) { delete model; }

vkf_status vkf_model_set_text_limit(vkf_model* model, size_t bytes) {
  if (!model) return invalid("vkf_model_set_text_limit", "model is NULL");
  model->text_limit->store(bytes);
  return VKF_OK;
}

}  // extern "C"
