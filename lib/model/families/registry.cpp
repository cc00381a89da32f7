// The registry of families: which config.json names vkformer runs, and everything that
// is asked of a family by its name (the model's kind, its tokenizer, the message listing
// the families) goes through it.
#include <algorithm>

#include "family.hpp"
#include "vkformer/model.hpp"
#include "vkformer/tokenizer.hpp"

namespace vkf {

namespace model {

namespace {

const Family* const kFamilies[] = {&kTorchSeq2Seq, &kForecaster, &kMarian, &kBart,    &kGpt2,      &kLlama,
                                   &kMistral,      &kQwen2,      &kBert,   &kRoberta, &kDistilBert};

const Family* find(const ModelFiles& files) {
  const std::string name = model_architecture(files);  // first: a clear error for a missing directory or file
  const bool hugging_face = !ConfigReader(files, "config.json").has("architecture");  // model_type instead
  for (const Family* f : kFamilies)
    if (f->hugging_face == hugging_face && name == f->name) return f;
  return nullptr;
}

// The families of one kind of directory, as a sentence's list: "marian, bart and gpt2".
std::string names(bool hugging_face) {
  std::string list;
  for (const Family* f : kFamilies)
    if (f->hugging_face == hugging_face) list += (list.empty() ? "" : ", ") + std::string(f->name);
  if (const size_t last = list.rfind(", "); last != std::string::npos) list.replace(last, 2, " and ");
  return list;
}

}  // namespace

const Family& family_of(const ModelFiles& files) {
  if (const Family* f = find(files)) return *f;
  const ConfigReader r(files, "config.json");
  const std::string name = model_architecture(files);
  throw Error("config " + files.where("config.json") + ": " +
                  (r.has("architecture")
                       ? "unknown architecture '" + name + "' (this vkformer knows: " + supported_model_families() + ")"
                       : "model_type '" + name + "' is not supported (vkformer runs Hugging Face model_type " +
                             names(true) + ")"),
              ErrorKind::Unsupported);
}

void check_runs_here(Context& ctx, const ModelFiles& files, uint32_t head_dim, DType precision) {
  if (head_dim > Ops::kMaxFusedHeadDim)
    throw Error("model " + files.label() + ": head_dim " + std::to_string(head_dim) + " is larger than the " +
                    std::to_string(Ops::kMaxFusedHeadDim) + " vkformer's attention kernel supports",
                ErrorKind::Unsupported);
  if (precision == DType::F16 && !ctx.capabilities().storage_16bit)
    throw Error("fp16 precision needs 16-bit storage, which device '" + ctx.capabilities().name + "' lacks",
                ErrorKind::Unsupported);
  if (!Ops(ctx, precision).fused_attention_fits(head_dim))
    throw Error("model " + files.label() + ": head_dim " + std::to_string(head_dim) +
                    " does not fit vkformer's attention kernel on device '" + ctx.capabilities().name + "'",
                ErrorKind::Unsupported);
}

}  // namespace model

ModelTask model_task(const ModelFiles& files) {
  const model::Family* f = model::find(files);
  return f ? f->kind : ModelTask::Unknown;
}

std::string supported_model_families() {
  return model::names(false) + ", and Hugging Face model_type " + model::names(true);
}

std::unique_ptr<Tokenizer> Tokenizer::for_model(const ModelFiles& files) {
  const model::Family& f = model::family_of(files);
  if (!f.make_tokenizer)
    throw Error("model " + files.label() + " (" + f.name + ") takes no text: it has no tokenizer", ErrorKind::Unsupported);
  // The model's vocabulary bounds the tokenizer's, checked before its tables are built.
  return f.make_tokenizer(files, model::ConfigReader(files, "config.json"));
}

std::vector<std::string> Tokenizer::files_for_model(const ModelFiles& files) {
  std::vector<std::string> names;
  for (const char* name : model::family_of(files).tokenizer_files)
    if (name) names.emplace_back(name);
  return names;
}

}  // namespace vkf
