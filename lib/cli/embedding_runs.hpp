#pragma once
// What `vkformer embed` and `vkformer search` share: the model and its Embedder loaded
// from the command line, texts embedded with progress on a terminal and the texts cut
// at max_seq_length said once on stderr, and the key of a corpus's cache.
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "args.hpp"
#include "vkformer/context.hpp"
#include "vkformer/embedder.hpp"

namespace vkf::cli {

class EmbeddingRun {
 public:
  EmbeddingRun(Context& ctx, const std::string& dir, const Args& args);
  // `what` names the texts in messages ("text", "corpus line").
  Embeddings embed(const std::vector<std::string>& texts, const char* what, bool progress = true);
  // A cross-encoder's score of (query, line) for each line (Embedder::score_pairs).
  std::vector<double> score_pairs(const std::string& query, const std::vector<std::string>& lines);
  nlohmann::ordered_json settings() const;  // pooling, normalize, max_tokens, precision
  std::string describe() const;             // "mean pooling, normalised, at most 256 tokens"
  // What a cache of these texts' embeddings must carry to be used: the model's files',
  // the settings' and the texts' hashes (FNV-1a 64), the texts' count and the width.
  std::string cache_key(const std::string& corpus_bytes, size_t lines) const;
  Embedder& embedder() { return *embedder_; }

 private:
  std::string dir_;
  std::string precision_, weights_;
  std::shared_ptr<const Model> model_;
  std::unique_ptr<Embedder> embedder_;
};

}  // namespace vkf::cli
