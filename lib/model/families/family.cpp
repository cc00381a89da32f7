// Model::load: the family config.json names (the registry's), its config, the checks
// every model must pass on this device, then its weights as the family declares them.
#include "family.hpp"

#include <filesystem>

#include "safetensors.hpp"
#include "vkformer/model.hpp"

namespace vkf {

namespace {

const char* type_name(model::TensorType t) {
  switch (t) {
    case model::TensorType::F32: return "F32";
    case model::TensorType::F16: return "F16";
    case model::TensorType::BF16: return "BF16";
    case model::TensorType::Integers: return "integers";
    case model::TensorType::Blocks: return "blocks";
  }
  return "?";
}

// The checkpoint Model::load read (it loaded, so one is there), summed from its header.
CheckpointSummary summarize_checkpoint(const ModelFiles& files) {
  CheckpointSummary s;
  s.file = files.has("model.safetensors") ? "model.safetensors" : "model.safetensors.index.json";
  const model::SafeTensors file(files, s.file);
  if (files.gguf()) s.file = std::filesystem::path(files.where(s.file)).filename().string();
  for (const auto& [name, t] : file.tensors()) {
    ++s.tensors;
    s.parameters += t.elements();
    s.bytes += t.bytes;
    std::string type = t.blocks ? block_type_name(*t.blocks) : type_name(t.type);
    for (char& ch : type) ch = char(std::toupper(static_cast<unsigned char>(ch)));
    s.dtypes[type] += t.elements();
  }
  return s;
}

}  // namespace

const char* activation_name(Activation a) {
  switch (a) {
    case Activation::None: return "none";
    case Activation::Relu: return "relu";
    case Activation::Gelu: return "gelu";
    case Activation::GeluTanh: return "gelu_tanh";
    case Activation::Silu: return "silu";
    case Activation::Tanh: return "tanh";
  }
  return "?";  // not an enumerator: a cast from a bad integer
}

const char* model_kind_name(ModelKind k) {
  switch (k) {
    case ModelKind::EncoderOnly: return "encoder-only";
    case ModelKind::DecoderOnly: return "decoder-only";
    case ModelKind::EncoderDecoder: return "encoder-decoder";
  }
  return "?";
}

const char* positions_name(ModelConfig::Positions p) {
  switch (p) {
    case ModelConfig::Positions::Interleaved: return "sinusoidal, interleaved";
    case ModelConfig::Positions::Halves: return "sinusoidal, sin half then cos half";
    case ModelConfig::Positions::Learned: return "learned";
    case ModelConfig::Positions::Rotary: return "rotary";
  }
  return "?";
}

Model::Model(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Model::~Model() = default;
const ModelConfig& Model::config() const { return impl_->config; }
DType Model::precision() const { return impl_->dtype; }
const CheckpointSummary& Model::checkpoint() const { return checkpoint_; }

std::shared_ptr<const Model> Model::load(Context& ctx, const ModelFiles& files, DType precision) {
  return load(ctx, files, LoadOptions{.precision = precision});
}

std::shared_ptr<const Model> Model::load(Context& ctx, const ModelFiles& files, const LoadOptions& options) {
  const DType precision = options.precision;
  const model::Family& family = model::family_of(files);
  if (family.kind == ModelTask::Forecaster)
    throw Error("model " + files.label() + " is a patch forecaster: Forecaster::load (`vkformer forecast`) runs it",
                ErrorKind::Unsupported);
  const ModelConfig c = family.read_config(files);
  model::check_runs_here(ctx, files, c.head_dim(), precision);
  auto impl = std::make_unique<Model::Impl>(Model::Impl{.ctx = ctx, .config = c, .dtype = precision});
  model::Checkpoint checkpoint(ctx, files, family.checkpoint(files), precision, c.architecture,
                               {.type = options.weights, .mix = options.mix});
  family.declare_tensors(checkpoint, *impl);  // (refusing more layers than the file holds first)
  checkpoint.load(options.progress);
  impl->dequantized_values = checkpoint.largest_weight_in_blocks();
  std::shared_ptr<Model> model(new Model(std::move(impl)));
  model->checkpoint_ = summarize_checkpoint(files);
  model->checkpoint_.weight_bytes = checkpoint.weight_bytes();
  model->checkpoint_.weights_not_in_blocks = checkpoint.weights_not_in_blocks();
  return model;
}

}  // namespace vkf
