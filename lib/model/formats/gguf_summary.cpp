// vkf::describe_gguf (include/vkformer/gguf.hpp): a GGUF file's header as users read it.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>

#include "gguf.hpp"
#include "gguf_hugging_face.hpp"
#include "vkformer/error.hpp"
#include "vkformer/gguf.hpp"

namespace vkf {

namespace {

// llama.cpp's llama_ftype names (general.file_type), without their "MOSTLY_" prefix.
const char* file_type_name(uint64_t t) {
  static const std::map<uint64_t, const char*> names = {
      {0, "F32"},     {1, "F16"},      {2, "Q4_0"},     {3, "Q4_1"},    {7, "Q8_0"},    {8, "Q5_0"},
      {9, "Q5_1"},    {10, "Q2_K"},    {11, "Q3_K_S"},  {12, "Q3_K_M"}, {13, "Q3_K_L"}, {14, "Q4_K_S"},
      {15, "Q4_K_M"}, {16, "Q5_K_S"},  {17, "Q5_K_M"},  {18, "Q6_K"},   {19, "IQ2_XXS"}, {20, "IQ2_XS"},
      {21, "Q2_K_S"}, {22, "IQ3_XS"},  {23, "IQ3_XXS"}, {24, "IQ1_S"},  {25, "IQ4_NL"}, {26, "IQ3_S"},
      {27, "IQ3_M"},  {28, "IQ2_S"},   {29, "IQ2_M"},   {30, "IQ4_XS"}, {31, "IQ1_M"},  {32, "BF16"},
      {36, "TQ1_0"},  {37, "TQ2_0"},   {38, "MXFP4_MOE"}};
  const auto it = names.find(t);
  return it == names.end() ? nullptr : it->second;
}

std::string shown(const model::GgufValue& v) {
  using T = model::GgufValueType;
  switch (v.type) {
    case T::String: return std::string(v.s.substr(0, 200)) + (v.s.size() > 200 ? "..." : "");
    case T::Bool: return v.u ? "true" : "false";
    case T::F32: case T::F64: {
      char text[64];
      std::snprintf(text, sizeof text, "%.9g", v.f);
      return text;
    }
    case T::I8: case T::I16: case T::I32: case T::I64: return std::to_string(v.i);
    case T::Array: return "[" + std::to_string(v.count) + " " + model::gguf_value_type_name(v.element) + "]";
    default: return std::to_string(v.u);
  }
}

}  // namespace

bool is_gguf_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char magic[4] = {};
  return in && in.read(magic, 4) && std::string_view(magic, 4) == "GGUF";
}

GgufSummary describe_gguf(const std::string& path) {
  const model::Gguf g(path);
  GgufSummary s;
  s.file = path;
  s.version = g.version();
  s.bytes = g.file_bytes();
  s.alignment = g.alignment();
  s.metadata = g.metadata().size();
  s.tensors = g.tensors().size();
  s.architecture = g.string_value("general.architecture").value_or("");
  s.name = g.string_value("general.name").value_or("");
  if (const auto t = g.uint_value("general.file_type")) {
    const char* n = file_type_name(*t);
    s.file_type = n ? n : "type " + std::to_string(*t);
  }
  const std::string prefix = s.architecture + ".";
  for (const auto& [key, v] : g.metadata())
    if (!s.architecture.empty() && key.rfind(prefix, 0) == 0) s.hyperparameters.emplace_back(key.substr(prefix.size()), shown(v));
  if (const auto model = g.string_value("tokenizer.ggml.model")) {
    s.tokenizer = *model;
    if (const auto pre = g.string_value("tokenizer.ggml.pre")) s.tokenizer += " (pre " + *pre + ")";
    if (const auto* tokens = g.array_value("tokenizer.ggml.tokens", model::GgufValueType::String))
      s.tokenizer += ", " + std::to_string(tokens->count) + " tokens";
  } else {
    s.tokenizer = "none";
  }
  try {
    (void)model::gguf_hugging_face_config(g);  // its metadata as a model's config
    s.runs = g.tensors().count("token_embd.weight") > 0;
    if (!s.runs) s.why_not = "it holds no token_embd.weight (a vocabulary-only file?): its tokenizer is read";
  } catch (const Error& e) {
    s.why_not = e.what();
  }
  std::map<std::string, GgufSummary::Storage> by_type;
  for (const auto& [name, t] : g.tensors()) {
    auto& st = by_type[t.type.name];
    st.type = t.type.name, ++st.tensors, st.bytes += t.bytes;
  }
  for (auto& [type, st] : by_type) s.storage.push_back(st);
  std::stable_sort(s.storage.begin(), s.storage.end(), [](const auto& a, const auto& b) { return a.bytes > b.bytes; });
  return s;
}

}  // namespace vkf
