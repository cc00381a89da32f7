// read_sentence_transformers: modules.json, 1_Pooling/config.json and
// sentence_bert_config.json as sentence-transformers (2.x) reads them.
#include "sentence_transformers.hpp"

#include <nlohmann/json.hpp>

#include "json_file.hpp"
#include "vkformer/error.hpp"

namespace vkf {

const char* pooling_name(Pooling p) {
  switch (p) {
    case Pooling::Cls: return "cls";
    case Pooling::Max: return "max";
    case Pooling::Mean: return "mean";
    case Pooling::MeanSqrtLen: return "mean_sqrt_len_tokens";
  }
  return "?";
}

namespace model {

namespace {

// A module's folder: a relative path inside the directory, one plain name deep (as
// sentence-transformers writes them: "1_Pooling"), so nothing outside it is read.
bool plain_folder(const std::string& path) {
  return !path.empty() && path != "." && path != ".." && path.find('/') == std::string::npos &&
         path.find('\\') == std::string::npos && path.find('\0') == std::string::npos;
}

void read_pooling(const ModelFiles& files, const std::string& folder, uint32_t width, EmbedderConfig& c) {
  if (!plain_folder(folder))
    throw Error("modules.json " + files.where("modules.json") + ": the Pooling module's path '" + folder +
                "' must be a folder of the model directory");
  const std::string name = folder + "/config.json";
  if (!files.directory().empty() ? !files.has(name) : !files.has(folder + "_config.json"))
    throw Error("sentence-transformers pooling " + files.where(name) + " is missing", ErrorKind::NotFound);
  // In memory, a module's file is named with '_' for '/' ("1_Pooling_config.json").
  const nlohmann::json j = read_json_object(files, files.directory().empty() ? folder + "_config.json" : name, "pooling");
  const std::string where = "pooling " + files.where(name) + ": ";
  auto flag = [&](const char* key) { return json_limits::field(j, key, false); };
  if (j.contains("word_embedding_dimension") && json_limits::field(j, "word_embedding_dimension", uint64_t(0)) != width)
    throw Error(where + "word_embedding_dimension " + j["word_embedding_dimension"].dump() + " is not the model's width " +
                std::to_string(width));
  if (flag("pooling_mode_weightedmean_tokens"))
    throw Error(where + "pooling_mode_weightedmean_tokens is set: vkformer runs cls, max, mean and mean_sqrt_len_tokens pooling",
                ErrorKind::Unsupported);
  if (flag("pooling_mode_lasttoken"))
    throw Error(where + "pooling_mode_lasttoken is set: vkformer runs cls, max, mean and mean_sqrt_len_tokens pooling",
                ErrorKind::Unsupported);
  if (j.contains("include_prompt") && !json_limits::field(j, "include_prompt", true))
    throw Error(where + "include_prompt is false, which vkformer does not run (it takes no prompts)", ErrorKind::Unsupported);
  c.pooling.clear();
  if (flag("pooling_mode_cls_token")) c.pooling.push_back(Pooling::Cls);
  if (flag("pooling_mode_max_tokens")) c.pooling.push_back(Pooling::Max);
  if (flag("pooling_mode_mean_tokens")) c.pooling.push_back(Pooling::Mean);
  if (flag("pooling_mode_mean_sqrt_len_tokens")) c.pooling.push_back(Pooling::MeanSqrtLen);
  if (c.pooling.empty()) throw Error(where + "sets no pooling mode");
}

}  // namespace

EmbedderConfig read_sentence_transformers(const ModelFiles& files, uint32_t width, uint32_t max_position) try {
  EmbedderConfig c;
  c.pooling = {Pooling::Mean};  // a plain transformers model, as sentence-transformers wraps one
  uint32_t most = max_position;
  if (files.has("tokenizer_config.json")) {
    const nlohmann::json t = read_json_object(files, "tokenizer_config.json", "tokenizer");
    if (t.contains("model_max_length") && t["model_max_length"].is_number_unsigned())
      most = uint32_t(std::min<uint64_t>(most, t["model_max_length"].get<uint64_t>()));
  }
  if (files.has("modules.json")) {
    c.sentence_transformers = true;
    const std::string where = "modules.json " + files.where("modules.json") + ": ";
    const nlohmann::json j = json_limits::parse(files.read("modules.json", "modules.json", kConfigFileBytes));
    if (!j.is_array() || j.empty() || j.size() > 64) throw Error(where + "must be a list of modules");
    bool transformer = false, pooling = false;
    for (const auto& m : j) {
      const std::string type = m.is_object() ? json_limits::field(m, "type", std::string()) : std::string();
      const std::string path = m.is_object() ? json_limits::field(m, "path", std::string()) : std::string();
      const std::string kind = type.substr(type.rfind('.') + 1);
      if (type.rfind("sentence_transformers.models.", 0) != 0)
        throw Error(where + "module '" + json_limits::shown(m, 60) + "' is not one of sentence_transformers.models",
                    ErrorKind::Unsupported);
      if (kind == "Transformer") {
        if (transformer || pooling || (!path.empty() && path != "0_Transformer"))
          throw Error(where + "vkformer runs one Transformer module, first, at the directory's root (path '" + path + "')",
                      ErrorKind::Unsupported);
        transformer = true;
      } else if (kind == "Pooling") {
        if (!transformer || pooling) throw Error(where + "the Pooling module must follow the Transformer, once");
        read_pooling(files, path, width, c);
        pooling = true;
      } else if (kind == "Normalize") {
        // It has no files (all-MiniLM-L6-v2 lists a 2_Normalize folder it does not ship).
        if (!pooling || c.normalize) throw Error(where + "Normalize must follow the Pooling module, once");
        c.normalize = true;
      } else {
        throw Error(where + "module " + kind + " is not supported (vkformer runs Transformer, Pooling and Normalize)",
                    ErrorKind::Unsupported);
      }
    }
    if (!transformer || !pooling) throw Error(where + "needs a Transformer and a Pooling module");
    if (files.has("sentence_bert_config.json")) {
      const nlohmann::json s = read_json_object(files, "sentence_bert_config.json", "sentence-transformers config");
      if (json_limits::field(s, "do_lower_case", false))
        throw Error("sentence-transformers config " + files.where("sentence_bert_config.json") +
                        ": do_lower_case is true, which vkformer does not run",
                    ErrorKind::Unsupported);
      if (s.contains("max_seq_length") && !s["max_seq_length"].is_null()) {
        const uint64_t n = json_limits::field(s, "max_seq_length", uint64_t(0));
        if (n < 2)
          throw Error("sentence-transformers config " + files.where("sentence_bert_config.json") +
                      ": max_seq_length must leave room for [CLS] and [SEP]");
        // Past the model's positions no text could run: those bound it.
        most = uint32_t(std::min<uint64_t>(n, max_position));
      }
    }
  }
  c.max_tokens = most;
  c.width = uint32_t(c.pooling.size()) * width;
  return c;
} catch (const json_limits::WrongType& e) {
  throw Error("sentence-transformers " + files.where("modules.json") + ": " + e.what());
} catch (const json_limits::TooDeep& e) {
  throw Error("modules.json " + files.where("modules.json") + ": " + e.what());
} catch (const nlohmann::json::parse_error& e) {
  throw Error("modules.json " + files.where("modules.json") + ": is not valid JSON: " + e.what());
}

}  // namespace model
}  // namespace vkf
