// EmbeddingRun (embedding_runs.hpp).
#include "embedding_runs.hpp"

#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include "hash.hpp"
#include "options.hpp"
#include "vkformer/model_files.hpp"

namespace vkf::cli {

EmbeddingRun::EmbeddingRun(Context& ctx, const std::string& dir, const Args& args) : dir_(dir) {
  precision_ = to_string(precision(args));
  weights_ = args.value("--weights").value_or("");
  model_ = load_model(ctx, dir, args);
  embedder_ = std::make_unique<Embedder>(model_, ModelFiles(dir));
  if (const auto batch = args.value("--batch")) embedder_->batch_size = uint32_t(std::stoul(*batch));
}

Embeddings EmbeddingRun::embed(const std::vector<std::string>& texts, const char* what, bool progress) {
  const bool terminal = progress && ::isatty(STDERR_FILENO) && texts.size() > embedder_->batch_size;
  Embeddings e;
  try {
    e = embedder_->embed(texts, [&](size_t done, size_t total) {
      if (terminal) std::fprintf(stderr, "\rembedding: %zu/%zu %ss", done, total, what);
    });
  } catch (const Error& err) {
    if (terminal) std::fprintf(stderr, "\n");
    // The Embedder names texts by index from 0; a person reads lines from 1.
    std::string m = err.what();
    if (m.rfind("embed: text ", 0) == 0) {
      const size_t end = m.find(':', 12);
      const size_t i = std::stoul(m.substr(12, end - 12));
      m = std::string(what) + " " + std::to_string(i + 1) + m.substr(end);
    }
    throw Error(m, err.kind());
  }
  if (terminal) std::fprintf(stderr, "\n");
  if (!e.truncated.empty()) {
    std::string which;
    for (size_t k = 0; k < e.truncated.size() && k < 10; ++k) which += (k ? ", " : "") + std::to_string(e.truncated[k] + 1);
    if (e.truncated.size() > 10) which += ", ...";
    if (e.truncated.size() == 1)
      std::fprintf(stderr, "vkformer: %s %s is longer than max_seq_length %u tokens: cut there, as sentence-transformers cuts it\n",
                   what, which.c_str(), embedder_->config().max_tokens);
    else
      std::fprintf(stderr, "vkformer: %zu %ss (%s) are longer than max_seq_length %u tokens: cut there, as sentence-transformers cuts them\n",
                   e.truncated.size(), what, which.c_str(), embedder_->config().max_tokens);
  }
  return e;
}

std::vector<double> EmbeddingRun::score_pairs(const std::string& query, const std::vector<std::string>& lines) {
  std::vector<std::pair<std::string, std::string>> pairs;
  pairs.reserve(lines.size());
  for (const std::string& line : lines) pairs.push_back({query, line});
  const bool terminal = ::isatty(STDERR_FILENO) && lines.size() > embedder_->batch_size;
  std::vector<float> s;
  try {
    s = embedder_->score_pairs(pairs, [&](size_t done, size_t total) {
      if (terminal) std::fprintf(stderr, "\rscoring: %zu/%zu pairs", done, total);
    });
  } catch (const Error& e) {
    if (terminal) std::fprintf(stderr, "\n");
    std::string m = e.what();
    if (m.rfind("score_pairs: pair ", 0) == 0) {  // lines from 1
      const size_t end = m.find(':', 18);
      m = "corpus line " + std::to_string(std::stoul(m.substr(18, end - 18)) + 1) + m.substr(end);
    }
    throw Error(m, e.kind());
  }
  if (terminal) std::fprintf(stderr, "\n");
  return std::vector<double>(s.begin(), s.end());
}

nlohmann::ordered_json EmbeddingRun::settings() const {
  const EmbedderConfig& c = embedder_->config();
  nlohmann::ordered_json pooling = nlohmann::ordered_json::array();
  for (Pooling p : c.pooling) pooling.push_back(pooling_name(p));
  return {{"model", dir_}, {"pooling", pooling}, {"normalize", c.normalize}, {"max_tokens", c.max_tokens},
          {"sentence_transformers", c.sentence_transformers}, {"precision", precision_}};
}

std::string EmbeddingRun::describe() const {
  const EmbedderConfig& c = embedder_->config();
  std::string s;
  for (size_t i = 0; i < c.pooling.size(); ++i) s += (i ? "+" : "") + std::string(pooling_name(c.pooling[i]));
  return s + " pooling" + (c.normalize ? ", normalised" : "") + ", at most " + std::to_string(c.max_tokens) + " tokens";
}

std::string EmbeddingRun::cache_key(const std::string& corpus_bytes, size_t lines) const {
  // The files an Embedder reads: config, checkpoint, tokenizer and the sentence-transformers
  // modules' configs, each by name and content.
  namespace fs = std::filesystem;
  uint64_t model_hash = fnv1a64("vkformer embedding model", 24);
  std::vector<fs::path> files;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir_, ec)) {
    const std::string name = entry.path().filename().string();
    const bool wanted = name.ends_with(".json") || name.ends_with(".safetensors") || name == "vocab.txt";
    if (wanted && entry.is_regular_file(ec)) files.push_back(entry.path());
    if (entry.is_directory(ec) && fs::is_regular_file(entry.path() / "config.json", ec))
      files.push_back(entry.path() / "config.json");
  }
  std::sort(files.begin(), files.end());
  for (const fs::path& f : files) {
    const std::string name = fs::relative(f, dir_, ec).string();
    model_hash = fnv1a64(name.data(), name.size(), model_hash);
    const std::string bytes = ModelFiles(f.parent_path().string()).read(f.filename().string(), "model file", 1ull << 40);
    model_hash = fnv1a64(bytes.data(), bytes.size(), model_hash);
  }
  char key[256];
  std::snprintf(key, sizeof key,
                "\nvkformer embedding cache 1; vkformer %s; model %016llx; %s; weights %s; corpus %016llx; lines %zu; width %u\n",
                vkf::version(), static_cast<unsigned long long>(model_hash), precision_.c_str(),
                weights_.empty() ? "-" : weights_.c_str(),
                static_cast<unsigned long long>(fnv1a64(corpus_bytes.data(), corpus_bytes.size())), lines,
                embedder_->config().width);
  return key;
}

}  // namespace vkf::cli
