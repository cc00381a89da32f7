// `vkformer translate`: text in, text out, with the model's character tokenizer.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>

#include "commands.hpp"
#include "options.hpp"
#include "vkformer/model.hpp"
#include "vkformer/tokenizer.hpp"

namespace vkf::cli {

int translate(Args& args) {
  auto dir = args.value("--model");
  if (!dir) throw Error("--model DIR is required");
  const std::string p = args.value("--precision").value_or("fp32");
  if (p != "fp32" && p != "fp16") throw Error("--precision must be fp32 or fp16");
  GenerateOptions o;
  o.max_new_tokens = 32;
  if (auto n = args.value("--max-new-tokens")) o.max_new_tokens = uint32_t(std::stoul(*n));
  if (auto b = args.value("--beam")) o.beam = uint32_t(std::stoul(*b));
  const uint32_t batch = uint32_t(std::stoul(args.value("--batch").value_or("64")));
  if (batch == 0) throw Error("--batch must be at least 1");
  ContextOptions co = context_options(args);
  std::vector<std::string> inputs = args.rest();
  const bool from_stdin = inputs.empty();
  if (from_stdin)
    for (std::string line; std::getline(std::cin, line);) inputs.push_back(line);

  Context ctx(co);
  auto tokenizer = CharTokenizer::from_file((std::filesystem::path(*dir) / "vocab.json").string());
  auto model = Model::load(ctx, *dir, p == "fp16" ? DType::F16 : DType::F32);
  if (tokenizer.size() != model->config().src_vocab_size)
    throw Error("vocab.json has " + std::to_string(tokenizer.size()) + " tokens but the model's source vocabulary has " +
                std::to_string(model->config().src_vocab_size));
  Session session(model);
  auto t0 = std::chrono::steady_clock::now();
  for (size_t i = 0; i < inputs.size(); i += batch) {
    std::vector<std::vector<uint32_t>> sources;
    for (size_t k = i; k < std::min(inputs.size(), i + batch); ++k) {
      auto ids = tokenizer.encode(inputs[k]);
      if (ids.empty()) ids.push_back(tokenizer.unk_id());  // an empty line: one unknown token
      if (ids.size() > model->config().max_position) ids.resize(model->config().max_position);
      sources.push_back(std::move(ids));
    }
    auto out = session.generate(sources, o);
    for (size_t k = 0; k < out.size(); ++k) {
      if (from_stdin) std::printf("%s\n", tokenizer.decode(out[k]).c_str());
      else std::printf("%s -> %s\n", inputs[i + k].c_str(), tokenizer.decode(out[k]).c_str());
    }
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (inputs.size() > 8)
    std::fprintf(stderr, "vkformer: %zu inputs in %.2f s on %s\n", inputs.size(), s, ctx.capabilities().name.c_str());
  return 0;
}

}  // namespace vkf::cli
