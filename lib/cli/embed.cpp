// `vkformer embed`: sentence embeddings of texts given as arguments or lines of stdin.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "embedding_runs.hpp"
#include "options.hpp"
#include "stdin_lines.hpp"

namespace vkf::cli {

int embed(const Args& args) {
  const std::string dir = model_dir(args, ModelTask::Encoder);
  std::vector<std::string> texts = args.rest();
  if (texts.empty()) {  // one text a line of standard input
    StdinLines in;
    std::vector<std::string> lines;
    std::vector<bool> overlong;
    while (in.next_batch(lines, 1024, overlong)) {
      for (size_t i = 0; i < lines.size(); ++i) {
        if (overlong[i])
          throw Error("standard input line " + std::to_string(texts.size() + 1) + " is longer than " +
                      std::to_string(StdinLines::kMaxLineBytes) + " bytes");
        texts.push_back(std::move(lines[i]));
      }
    }
    if (texts.empty()) throw Error("no text to embed: give texts as arguments or lines on standard input");
  }
  Context ctx(context_options(args));
  EmbeddingRun run(ctx, dir, args);
  run.embedder().set_profile(args.flag("--profile"));
  const auto start = std::chrono::steady_clock::now();
  const Embeddings e = run.embed(texts, "text");
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (args.flag("--profile"))
    std::fprintf(stderr, "embedded %u texts in %.3f s (%.1f texts/s); the last batch's dispatches:\n%s", e.count, seconds,
                 e.count / seconds, run.embedder().profile_report().c_str());
  const auto out = args.value("--out");
  if (out) write_npy(*out, e.values, e.count, e.width);
  if (args.flag("--json")) {
    nlohmann::ordered_json j = run.settings();
    j["count"] = e.count;
    j["width"] = e.width;
    j["truncated"] = e.truncated;
    j["out"] = out ? nlohmann::ordered_json(*out) : nlohmann::ordered_json(nullptr);
    if (!out) {
      nlohmann::ordered_json rows = nlohmann::ordered_json::array();
      for (uint32_t i = 0; i < e.count; ++i)
        rows.push_back(std::vector<float>(e.values.begin() + size_t(i) * e.width, e.values.begin() + size_t(i + 1) * e.width));
      j["embeddings"] = std::move(rows);
    }
    std::printf("%s\n", j.dump().c_str());
  } else if (out) {
    std::printf("%u texts x %u: %s -> %s\n", e.count, e.width, run.describe().c_str(), out->c_str());
  } else {
    for (uint32_t i = 0; i < e.count; ++i) {
      std::string line;
      for (uint32_t c = 0; c < e.width; ++c) {
        char v[32];
        std::snprintf(v, sizeof v, "%s%.9g", c ? " " : "", double(e.values[size_t(i) * e.width + c]));
        line += v;
      }
      std::printf("%s\n", line.c_str());
    }
  }
  return 0;
}

}  // namespace vkf::cli
