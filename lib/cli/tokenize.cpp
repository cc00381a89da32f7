// `vkformer tokenize`: a model's tokenizer from the command line, text to ids or ids to
// text, without opening a device.
#include <cstdio>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "options.hpp"
#include "vkformer/tokenizer.hpp"

namespace vkf::cli {

int tokenize(const Args& args) {
  auto dir = args.value("--model");
  if (!dir) throw Error("--model DIR is required (see --help)");
  checked_model_dir(*dir);
  const bool json = args.flag("--json");
  const auto ids = args.value("--ids");
  if (ids && !args.rest().empty()) throw Error("give text or --ids, not both");
  if (!ids && args.rest().empty()) throw Error("give the text to tokenize (or --ids 5,17,9 for the text of ids)");
  const auto tokenizer = Tokenizer::for_model(*dir);
  nlohmann::ordered_json out = {{"tokenizer", tokenizer->describe()}, {"vocab_size", tokenizer->size()}};
  if (ids) {
    const std::vector<uint32_t> list = parse_ids(*ids, "--ids");
    for (size_t i = 0; i < list.size(); ++i)
      if (list[i] >= tokenizer->size())
        throw Error("--ids entry " + std::to_string(i) + " is " + std::to_string(list[i]) + ", outside the tokenizer's " +
                    std::to_string(tokenizer->size()) + " tokens");
    const std::string text = tokenizer->decode(list);
    if (!json) {
      std::printf("%s\n", text.c_str());
      return 0;
    }
    out["ids"] = list;
    out["text"] = text;
  } else {
    out["texts"] = nlohmann::ordered_json::array();
    for (const std::string& text : args.rest()) {
      const std::vector<uint32_t> list = tokenizer->encode(text);  // not UTF-8: an error naming it
      if (json) {
        out["texts"].push_back({{"text", text}, {"ids", list}});
        continue;
      }
      std::string line;
      for (size_t i = 0; i < list.size(); ++i) line += (i ? "," : "") + std::to_string(list[i]);
      std::printf("%s\n", line.c_str());
    }
    if (!json) return 0;
  }
  std::printf("%s\n", out.dump().c_str());
  return 0;
}

}  // namespace vkf::cli
