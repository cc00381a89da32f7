// `vkformer info --model FILE.gguf`: what a GGUF file holds (vkf::describe_gguf).
#include <cstdio>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "vkformer/gguf.hpp"

namespace vkf::cli {

int gguf_info(const std::string& path, bool json) {
  const GgufSummary s = describe_gguf(path);
  nlohmann::ordered_json out = {{"file", s.file},
                                {"format", "gguf"},
                                {"version", s.version},
                                {"bytes", s.bytes},
                                {"alignment", s.alignment},
                                {"architecture", s.architecture},
                                {"name", s.name},
                                {"file_type", s.file_type},
                                {"tokenizer", s.tokenizer},
                                {"metadata_entries", s.metadata},
                                {"tensors", s.tensors},
                                {"runs", s.runs}};
  if (!s.runs) out["why_not"] = s.why_not;
  nlohmann::ordered_json& hp = out["hyperparameters"] = nlohmann::ordered_json::object();
  for (const auto& [key, value] : s.hyperparameters) hp[key] = value;
  nlohmann::ordered_json& storage = out["storage"] = nlohmann::ordered_json::array();
  for (const auto& st : s.storage) storage.push_back({{"type", st.type}, {"tensors", st.tensors}, {"bytes", st.bytes}});
  if (json) {
    std::printf("%s\n", out.dump(2).c_str());
    return 0;
  }
  std::printf("model %s\n", s.file.c_str());
  std::printf("  %-34s GGUF version %u, %.2f MB, alignment %llu, %llu metadata entries, %llu tensors\n", "file",
              s.version, s.bytes / 1e6, static_cast<unsigned long long>(s.alignment),
              static_cast<unsigned long long>(s.metadata), static_cast<unsigned long long>(s.tensors));
  std::printf("  %-34s %s\n", "architecture", s.architecture.empty() ? "(none given)" : s.architecture.c_str());
  if (!s.name.empty()) std::printf("  %-34s %s\n", "name", s.name.c_str());
  if (!s.file_type.empty()) std::printf("  %-34s %s\n", "file type", s.file_type.c_str());
  for (const auto& [key, value] : s.hyperparameters) std::printf("  %-34s %s\n", key.c_str(), value.c_str());
  std::printf("  %-34s %s\n", "tokenizer", s.tokenizer.c_str());
  for (const auto& st : s.storage)
    std::printf("  %-34s %llu tensors, %.2f MB\n", st.type.c_str(), static_cast<unsigned long long>(st.tensors),
                st.bytes / 1e6);
  std::printf("  %-34s %s\n", "runs", s.runs ? "yes (score, generate, ... --model FILE.gguf)" : ("no: " + s.why_not).c_str());
  return 0;
}

}  // namespace vkf::cli
