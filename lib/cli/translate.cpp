// `vkformer translate`: text in, text out, with the model's own tokenizer (characters,
// or Marian's SentencePiece) and generation settings; a line-by-line filter on standard input.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "options.hpp"
#include "stdin_lines.hpp"
#include "vkformer/tokenizer.hpp"

namespace vkf::cli {

int translate(const Args& args) {
  const std::string dir = model_dir(args, ModelTask::Generator);
  const DType dtype = precision(args);
  // 0: not given, the model's default (a Hugging Face model's generation_config.json;
  // 32 tokens and greedy for vkformer's own models).
  const uint32_t max_new_tokens = args.count("--max-new-tokens", 0);
  const uint32_t beam = args.count("--beam", 0);
  const uint32_t batch = args.count("--batch", 64);
  const bool truncate = args.flag("--truncate"), json = args.flag("--json"), profile = args.flag("--profile");
  ContextOptions co = context_options(args);
  const std::vector<std::string> texts = args.rest();
  const bool from_stdin = texts.empty();

  Context ctx(co);
  auto model = load_model(ctx, dir, args);  // first: it names an unsupported model_type as every command does
  const auto tokenizer_ptr = Tokenizer::for_model(dir);
  const Tokenizer& tokenizer = *tokenizer_ptr;
  const ModelConfig& c = model->config();
  if (tokenizer.size() != c.src_vocab_size)
    throw Error("the tokenizer, " + tokenizer.describe() + ", has " + std::to_string(tokenizer.size()) +
                " tokens but the model's source vocabulary has " +
                std::to_string(c.src_vocab_size));
  GenerateOptions o = GenerateOptions::defaults(c);
  if (!c.hugging_face) o.max_new_tokens = 32;
  if (max_new_tokens) o.max_new_tokens = max_new_tokens;
  if (beam) o.beam = beam;
  if (beam > 1) o.temperature = 0;  // a beam asked for: no sampling within it
  o.num_return_sequences = 1;       // one output per input line
  if (o.max_new_tokens > c.max_position)
    throw Error("--max-new-tokens " + std::to_string(o.max_new_tokens) + " is more than the model's max_position " +
                std::to_string(c.max_position));
  Session session(model);
  session.set_profile(profile);
  const char* what = from_stdin ? "line" : "input";

  size_t failed = 0;  // inputs reported as errors; the exit status is 1 when any was
  // Translates one batch; `first` numbers its inputs (from 1) in messages.
  auto answer = [&](const std::vector<std::string>& inputs, size_t first, const std::vector<bool>& overlong) {
    std::vector<std::vector<uint32_t>> sources;
    std::vector<bool> truncated(inputs.size(), false), empty(inputs.size(), false);
    std::vector<std::string> problem(inputs.size());  // an input that cannot be read: reported, not answered
    for (size_t k = 0; k < inputs.size(); ++k) {
      if (k < overlong.size() && overlong[k]) {
        problem[k] = "longer than " + std::to_string(StdinLines::kMaxLineBytes >> 20) + " MiB, which vkformer does not read";
        continue;
      }
      // Text past what the model can read: refused before it is tokenized, or cut to it
      // (at a character's start) with --truncate, whose ids are then cut below.
      std::string_view input = inputs[k];
      if (const size_t most = tokenizer.text_bytes_for(c.max_position); input.size() > most) {
        if (!truncate) {
          problem[k] = "it is " + std::to_string(input.size()) + " bytes, more than the " + std::to_string(most) +
                       " a model of " + std::to_string(c.max_position) +
                       " positions can read. --truncate cuts longer inputs, with a warning";
          continue;
        }
        size_t cut = most;
        while (cut > 0 && (uint8_t(input[cut]) & 0xC0) == 0x80) --cut;
        input = input.substr(0, cut);
      }
      std::vector<uint32_t> ids;
      try {
        ids = tokenizer.encode(input);
      } catch (const Error& e) {
        problem[k] = e.what();
        continue;
      }
      if (ids.size() > c.max_position) {
        if (!truncate) {
          problem[k] = "it has " + std::to_string(ids.size()) + " tokens; the model takes at most " +
                       std::to_string(c.max_position) + " (max_position). --truncate cuts longer inputs, with a warning";
          continue;
        }
        std::fprintf(stderr, "vkformer translate: warning: %s %zu cut from %zu to %u tokens (--truncate)\n", what,
                     first + k, ids.size(), c.max_position);
        ids.resize(c.max_position);
        truncated[k] = true;
      }
      empty[k] = inputs[k].empty() || ids.empty();  // an empty input: an empty output, no model call
      if (!empty[k]) sources.push_back(std::move(ids));
    }
    // A decoder-only model's default length: within the positions the batch's longest
    // prompt leaves (as generate and the C API take it).
    GenerateOptions batch_o = o;
    if (c.kind == ModelKind::DecoderOnly && !max_new_tokens) {
      size_t longest = 0;
      for (const auto& src : sources) longest = std::max(longest, src.size());
      batch_o.max_new_tokens = GenerateOptions::defaults(c, longest).max_new_tokens;
    }
    std::vector<std::vector<uint32_t>> outs;
    if (!sources.empty()) outs = session.generate(sources, batch_o);
    for (size_t k = 0, s = 0; k < inputs.size(); ++k) {
      if (!problem[k].empty()) {
        // Named on stderr with its number; on stdout an empty line keeps a filter's lines
        // aligned with its input (--json prints nothing: each object names its input).
        std::fprintf(stderr, "vkformer translate: error: %s %zu: %s\n", what, first + k, problem[k].c_str());
        ++failed;
        if (!json) std::printf("%s\n", from_stdin ? "" : (inputs[k] + " -> (error)").c_str());
        continue;
      }
      const std::vector<uint32_t> ids = empty[k] ? std::vector<uint32_t>{} : outs[s++];
      const bool finished = empty[k] || (!ids.empty() && ids.back() == c.eos_id);
      if (!finished)
        std::fprintf(stderr, "vkformer translate: warning: %s %zu stopped at --max-new-tokens %u before the end token\n",
                     what, first + k, batch_o.max_new_tokens);
      const std::string text = tokenizer.decode(ids);
      if (json) {
        nlohmann::json j = {{"input", inputs[k]}, {"output", text},   {"ids", ids},
                            {"finished", finished}, {"truncated", bool(truncated[k])}};
        std::printf("%s\n", j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
      } else if (from_stdin) {
        std::printf("%s\n", text.c_str());
      } else {
        std::printf("%s -> %s\n", inputs[k].c_str(), text.c_str());
      }
    }
    if (std::fflush(stdout) != 0 || std::ferror(stdout)) throw Error("cannot write to standard output");
  };

  const auto t0 = std::chrono::steady_clock::now();
  const bool terminal = ::isatty(STDERR_FILENO);
  size_t done = 0;
  auto progress = [&](bool last) {
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (terminal && s > 2) std::fprintf(stderr, "\rvkformer translate: %zu %ss, %.1f per second%s", done, what, done / s, last ? "\n" : "");
  };
  if (!from_stdin) {
    for (size_t i = 0; i < texts.size(); i += batch) {
      std::vector<std::string> part(texts.begin() + long(i), texts.begin() + long(std::min(texts.size(), i + batch)));
      answer(part, i + 1, {});
      done += part.size();
      progress(false);
    }
  } else {
    StdinLines lines;
    std::vector<bool> overlong;
    for (std::vector<std::string> part; lines.next_batch(part, batch, overlong);) {
      answer(part, done + 1, overlong);
      done += part.size();
      progress(false);
    }
  }
  progress(true);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (done > 8 && !terminal)
    std::fprintf(stderr, "vkformer translate: %zu %ss in %.2f s on %s\n", done, what, s, ctx.capabilities().name.c_str());
  if (profile) std::fprintf(stderr, "%s", session.profile_report().c_str());
  if (failed) {
    std::fprintf(stderr, "vkformer translate: %zu of %zu %ss could not be translated (named above)\n", failed, done, what);
    return 1;
  }
  return 0;
}

}  // namespace vkf::cli
