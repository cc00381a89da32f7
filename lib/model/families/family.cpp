// Model::load: the family config.json names, its config, the checks every family's model
// must pass on this device, then its weights.
#include "family.hpp"

#include <filesystem>

#include "config_reader.hpp"
#include "safetensors.hpp"
#include "vkformer/model.hpp"

namespace vkf {

namespace {

const model::Family* const kFamilies[] = {&model::kTorchSeq2Seq, &model::kMarian, &model::kBart,
                                          &model::kGpt2,         &model::kLlama,  &model::kMistral, &model::kQwen2};

const model::Family& family_of(const ModelFiles& files) {
  const std::string name = model_architecture(files);  // first: a clear error for a missing directory or file
  const model::ConfigReader r(files, "config.json");
  const bool hugging_face = !r.has("architecture");  // a Hugging Face directory names its model_type instead
  for (const model::Family* f : kFamilies)
    if (f->hugging_face == hugging_face && name == f->name) return *f;
  const std::string file = files.where("config.json");
  if (hugging_face)
    throw Error("config " + file + ": model_type '" + name +
                    "' is not supported (vkformer runs Hugging Face model_type marian, bart, gpt2, llama, mistral and qwen2)",
                ErrorKind::Unsupported);
  throw Error("config " + file + ": unknown architecture '" + name +
                  "' (this vkformer knows: torch-seq2seq, and Hugging Face model_type marian, bart, gpt2, llama, mistral and qwen2)",
              ErrorKind::Unsupported);
}

const char* type_name(model::TensorType t) {
  switch (t) {
    case model::TensorType::F32: return "F32";
    case model::TensorType::F16: return "F16";
    case model::TensorType::BF16: return "BF16";
  }
  return "?";
}

// The checkpoint Model::load read (it loaded, so one is there), summed from its header.
CheckpointSummary summarize_checkpoint(const ModelFiles& files) {
  CheckpointSummary s;
  s.file = files.has("model.safetensors") ? "model.safetensors" : "model.safetensors.index.json";
  const model::SafeTensors file(files, s.file);
  for (const auto& [name, t] : file.tensors()) {
    ++s.tensors;
    s.parameters += t.elements();
    s.bytes += t.bytes;
    s.dtypes[type_name(t.type)] += t.elements();
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
  }
  return "?";  // not an enumerator: a cast from a bad integer
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
  const model::Family& family = family_of(files);
  const ModelConfig c = family.read_config(files);
  if (precision == DType::F16 && !ctx.capabilities().storage_16bit)
    throw Error("fp16 precision needs 16-bit storage, which device '" + ctx.capabilities().name + "' lacks",
                ErrorKind::Unsupported);
  if (!Ops(ctx, precision).fused_attention_fits(c.head_dim()))
    throw Error("model " + files.label() + ": head_dim " + std::to_string(c.head_dim()) +
                " does not fit vkformer's attention kernel on device '" + ctx.capabilities().name + "'",
                ErrorKind::Unsupported);
  std::shared_ptr<Model> model(new Model(family.load_weights(ctx, files, c, precision)));
  model->checkpoint_ = summarize_checkpoint(files);
  return model;
}

}  // namespace vkf
