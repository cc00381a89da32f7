// `vkformer encode`: an encoder-only model's last hidden state and pooled output.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "options.hpp"
#include "vkformer/encoder.hpp"

namespace vkf::cli {

int encode(const Args& args) {
  const std::string dir = model_dir(args, ModelTask::Encoder);
  const DType dtype = precision(args);
  const auto ids_text = args.value("--ids");
  if (!ids_text) throw Error("encode needs --ids (the token ids, comma-separated)");
  const auto ids = parse_ids(*ids_text, "--ids");
  const auto types_text = args.value("--token-types");
  const auto types = types_text ? parse_ids(*types_text, "--token-types") : std::vector<uint32_t>{};
  const auto hidden_out = args.value("--hidden-out"), pooled_out = args.value("--pooled-out"),
             logits_out = args.value("--logits-out");
  Context ctx(context_options(args));
  auto model = load_model(ctx, dir, args);
  Encoder encoder(model);
  const EncoderOutput o = encoder.encode(ids, types);
  if (pooled_out && o.pooled.empty())
    throw Error("--pooled-out: model " + dir + " has no pooler (its checkpoint holds no pooler.dense)");
  if (logits_out && o.logits.empty())
    throw Error("--logits-out: model " + dir + " has no head (a masked-LM or classification checkpoint has one)");
  if (hidden_out) write_npy(*hidden_out, o.hidden, o.tokens, o.width);
  if (pooled_out) write_npy(*pooled_out, o.pooled, 1, o.width);
  if (logits_out) write_npy(*logits_out, o.logits, o.logits_rows, o.logits_cols);
  // A classifier's answer: the label with the largest logit.
  const std::vector<std::string>& labels = model->config().labels;
  std::string label;
  if (!labels.empty() && o.logits.size() == labels.size())
    label = labels[size_t(std::max_element(o.logits.begin(), o.logits.end()) - o.logits.begin())];
  double norm = 0;  // of the first token's hidden state: a glance at the result
  for (uint32_t c = 0; c < o.width; ++c) norm += double(o.hidden[c]) * o.hidden[c];
  if (args.flag("--json")) {
    nlohmann::json j = {{"tokens", o.tokens}, {"width", o.width}, {"pooled", !o.pooled.empty()},
                        {"first_token_norm", std::sqrt(norm)}, {"precision", to_string(dtype)}};
    j["hidden_out"] = hidden_out ? nlohmann::json(*hidden_out) : nlohmann::json(nullptr);
    j["pooled_out"] = pooled_out ? nlohmann::json(*pooled_out) : nlohmann::json(nullptr);
    j["logits_shape"] = o.logits.empty() ? nlohmann::json(nullptr) : nlohmann::json({o.logits_rows, o.logits_cols});
    j["logits_out"] = logits_out ? nlohmann::json(*logits_out) : nlohmann::json(nullptr);
    j["label"] = label.empty() ? nlohmann::json(nullptr) : nlohmann::json(label);
    std::printf("%s\n", j.dump().c_str());
  } else {
    std::printf("%u tokens x %u: last hidden state%s%s (first token's norm %.6g)%s%s%s%s%s%s\n", o.tokens, o.width,
                o.pooled.empty() ? "" : " and pooled output",
                o.logits.empty() ? "" : (", logits " + std::to_string(o.logits_rows) + " x " + std::to_string(o.logits_cols)).c_str(),
                std::sqrt(norm), hidden_out ? "; hidden -> " : "", hidden_out ? hidden_out->c_str() : "",
                pooled_out ? "; pooled -> " : "", pooled_out ? pooled_out->c_str() : "", logits_out ? "; logits -> " : "",
                logits_out ? logits_out->c_str() : "");
    if (!label.empty()) std::printf("label: %s\n", label.c_str());
  }
  return 0;
}

}  // namespace vkf::cli
