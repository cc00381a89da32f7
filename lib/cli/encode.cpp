// `vkformer encode`: an encoder-only model's last hidden state and pooled output.
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
  const auto hidden_out = args.value("--hidden-out"), pooled_out = args.value("--pooled-out");
  Context ctx(context_options(args));
  auto model = load_model(ctx, dir, args);
  Encoder encoder(model);
  const EncoderOutput o = encoder.encode(ids, types);
  if (pooled_out && o.pooled.empty())
    throw Error("--pooled-out: model " + dir + " has no pooler (its checkpoint holds no pooler.dense)");
  if (hidden_out) write_npy(*hidden_out, o.hidden, o.tokens, o.width);
  if (pooled_out) write_npy(*pooled_out, o.pooled, 1, o.width);
  double norm = 0;  // of the first token's hidden state: a glance at the result
  for (uint32_t c = 0; c < o.width; ++c) norm += double(o.hidden[c]) * o.hidden[c];
  if (args.flag("--json")) {
    nlohmann::json j = {{"tokens", o.tokens}, {"width", o.width}, {"pooled", !o.pooled.empty()},
                        {"first_token_norm", std::sqrt(norm)}, {"precision", to_string(dtype)}};
    j["hidden_out"] = hidden_out ? nlohmann::json(*hidden_out) : nlohmann::json(nullptr);
    j["pooled_out"] = pooled_out ? nlohmann::json(*pooled_out) : nlohmann::json(nullptr);
    std::printf("%s\n", j.dump().c_str());
  } else {
    std::printf("%u tokens x %u: last hidden state%s (first token's norm %.6g)%s%s%s%s\n", o.tokens, o.width,
                o.pooled.empty() ? "" : " and pooled output", std::sqrt(norm), hidden_out ? "; hidden -> " : "",
                hidden_out ? hidden_out->c_str() : "", pooled_out ? "; pooled -> " : "", pooled_out ? pooled_out->c_str() : "");
  }
  return 0;
}

}  // namespace vkf::cli
