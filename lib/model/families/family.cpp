// Model::load: the family config.json names, its config, the checks every family's model
// must pass on this device, then its weights.
#include "family.hpp"

#include <filesystem>

#include "config_reader.hpp"
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

}  // namespace

Model::Model(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Model::~Model() = default;
const ModelConfig& Model::config() const { return impl_->config; }
DType Model::precision() const { return impl_->dtype; }

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
  return std::shared_ptr<const Model>(new Model(family.load_weights(ctx, files, c, precision)));
}

}  // namespace vkf
