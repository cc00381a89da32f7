// `vkformer search`: a corpus's lines ranked by cosine similarity to a query's embedding,
// the corpus's embeddings kept in a cache file where asked.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "embedding_runs.hpp"
#include "options.hpp"
#include "vkformer/model_files.hpp"

namespace vkf::cli {

namespace {

constexpr uint64_t kMaxCorpusBytes = 1ull << 30;

// The corpus's lines ("\n" or "\r\n" ends one; a last line may lack it). An empty or
// blank line is an error naming it: it would rank as noise, and a skipped line would
// renumber the rest. (Text that is not UTF-8 is named by its line when it is embedded.)
std::vector<std::string> corpus_lines(const std::string& bytes, const std::string& file) {
  std::vector<std::string> lines;
  for (size_t at = 0; at < bytes.size();) {
    size_t end = bytes.find('\n', at);
    if (end == std::string::npos) end = bytes.size();
    std::string line = bytes.substr(at, end - at);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const std::string where = "corpus " + file + " line " + std::to_string(lines.size() + 1);
    if (line.find_first_not_of(" \t\v\f") == std::string::npos) throw Error(where + " is empty: give one text a line");
    lines.push_back(std::move(line));
    at = end + 1;
  }
  if (lines.empty()) throw Error("corpus " + file + " holds no lines");
  return lines;
}

double norm_of(const float* v, uint32_t n) {
  double s = 0;
  for (uint32_t i = 0; i < n; ++i) s += double(v[i]) * v[i];
  return std::sqrt(s);
}

// The lines best first (ties: the earlier line), the top `top` printed.
int rank(const Args& args, const EmbeddingRun& run, const std::vector<std::string>& lines, const std::vector<double>& score,
         const std::string& cache_state, const std::string& corpus_file, const std::string& query, size_t top) {
  std::vector<std::pair<double, size_t>> scores(lines.size());
  for (size_t i = 0; i < lines.size(); ++i) scores[i] = {score[i], i};
  const size_t k = std::min(top, scores.size());
  std::partial_sort(scores.begin(), scores.begin() + ptrdiff_t(k), scores.end(),
                    [](const auto& a, const auto& b) { return a.first > b.first || (a.first == b.first && a.second < b.second); });
  if (args.flag("--json")) {
    nlohmann::ordered_json j = run.settings();
    j["corpus"] = corpus_file;
    j["lines"] = lines.size();
    j["query"] = query;
    j["score"] = args.flag("--pair") ? "cross_encoder" : "cosine";
    j["cache"] = cache_state;
    j["results"] = nlohmann::ordered_json::array();
    for (size_t r = 0; r < k; ++r)
      j["results"].push_back({{"line", scores[r].second + 1}, {"score", scores[r].first}, {"text", lines[scores[r].second]}});
    std::printf("%s\n", j.dump().c_str());
  } else {
    for (size_t r = 0; r < k; ++r)
      std::printf("%.4f  line %zu: %s\n", scores[r].first, scores[r].second + 1, lines[scores[r].second].c_str());
  }
  return 0;
}

}  // namespace

int search(const Args& args) {
  const std::string dir = model_dir(args, ModelTask::Encoder);
  const auto corpus_file = args.value("--corpus");
  const auto query = args.value("--query");
  if (!corpus_file) throw Error("search needs --corpus FILE (the texts to search, one a line)");
  if (!query) throw Error("search needs --query \"text\"");
  const size_t top = args.value("--top") ? std::stoul(*args.value("--top")) : 5;
  const auto cache = args.value("--cache");
  const std::filesystem::path cp(*corpus_file);
  const std::string bytes = ModelFiles(cp.parent_path().empty() ? "." : cp.parent_path().string())
                                .read(cp.filename().string(), "corpus", kMaxCorpusBytes);
  const std::vector<std::string> lines = corpus_lines(bytes, *corpus_file);

  const bool pair = args.flag("--pair");
  if (pair && cache)
    throw Error("--cache keeps a corpus's embeddings; a cross-encoder (--pair) scores each pair with the query anew");
  Context ctx(context_options(args));
  EmbeddingRun run(ctx, dir, args);
  if (pair) return rank(args, run, lines, run.score_pairs(*query, lines), "none", *corpus_file, *query, top);
  const Embeddings q = run.embed({*query}, "query", false);
  // The corpus's embeddings: from the cache where its key is this run's, else embedded.
  Embeddings corpus;
  std::string cache_state = "none";
  const std::string key = cache ? run.cache_key(bytes, lines.size()) : std::string();
  if (cache && std::filesystem::exists(*cache)) {
    std::string why;
    try {
      NpyMatrix m = read_npy(*cache, uint64_t(lines.size()) * q.width * 4 + (1u << 20));
      if (m.trailer != key) why = "was made from another model, corpus or setting";
      else if (m.rows != lines.size() || m.cols != q.width) why = "holds another shape";
      else corpus.count = uint32_t(m.rows), corpus.width = uint32_t(m.cols), corpus.values = std::move(m.values);
    } catch (const Error& e) {
      why = std::string("cannot be used (") + e.what() + ")";
    }
    cache_state = why.empty() ? "used" : "rebuilt";
    if (!why.empty()) std::fprintf(stderr, "vkformer: cache %s %s: embedding the corpus again\n", cache->c_str(), why.c_str());
  }
  if (corpus.values.empty()) {
    corpus = run.embed(lines, "corpus line");
    if (cache) {
      write_npy(*cache, corpus.values, corpus.count, corpus.width, key);
      if (cache_state == "none") cache_state = "written";
    }
  }
  // Cosine similarity to each line.
  const uint32_t W = q.width;
  const double qn = norm_of(q.values.data(), W);
  std::vector<double> scores(lines.size());
  for (size_t i = 0; i < lines.size(); ++i) {
    const float* row = corpus.values.data() + i * W;
    double dot = 0;
    for (uint32_t c = 0; c < W; ++c) dot += double(row[c]) * q.values[c];
    const double n = norm_of(row, W) * qn;
    scores[i] = n > 0 ? dot / n : 0.0;
  }
  return rank(args, run, lines, scores, cache_state, *corpus_file, *query, top);
}

}  // namespace vkf::cli
