#pragma once
// Sentence embeddings, as sentence-transformers computes them from its model directories:
// modules.json's Transformer (an encoder-only model at the directory's root), Pooling
// (1_Pooling/config.json: the [CLS] token, the mean, the max or the mean times
// sqrt(length) of each text's tokens, concatenated where several are set) and
// Normalize (to unit length); sentence_bert_config.json's max_seq_length cuts longer
// texts. A directory without modules.json embeds as sentence-transformers does a plain
// transformers model: the mean of the tokens, not normalised.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "vkformer/model.hpp"
#include "vkformer/model_files.hpp"

namespace vkf {

// sentence-transformers' pooling modes, in the order it concatenates them.
enum class Pooling : uint8_t { Cls, Max, Mean, MeanSqrtLen };
const char* pooling_name(Pooling p);  // "cls", "max", "mean", "mean_sqrt_len_tokens"

struct EmbedderConfig {
  std::vector<Pooling> pooling;  // concatenated in this order
  bool normalize = false;
  uint32_t max_tokens = 0;       // a text's tokens, [CLS] and [SEP] included, cut to this many
  uint32_t width = 0;            // of one embedding: pooling.size() x the model's width
  bool sentence_transformers = false;  // read from modules.json (else the plain model's default)
};

struct Embeddings {
  uint32_t count = 0, width = 0;
  std::vector<float> values;      // [count, width], in the texts' order
  std::vector<size_t> truncated;  // the texts cut to max_tokens
};

class Embedder {
 public:
  // The model (Model::load of the same files) and the directory's files: modules.json
  // and its modules' configs, and the tokenizer. Anything that would change the
  // embeddings and vkformer does not run (a Dense module, weighted-mean or last-token
  // pooling, lower-casing by sentence_bert_config.json) is refused by name.
  Embedder(std::shared_ptr<const Model> model, const ModelFiles& files);
  ~Embedder();
  Embedder(const Embedder&) = delete;
  Embedder& operator=(const Embedder&) = delete;

  const EmbedderConfig& config() const;
  // Texts (valid UTF-8, no NUL; empty is allowed: [CLS] [SEP]) in batches of
  // `batch_size`, longest first so that a batch pads little. progress(done, total) after
  // each batch.
  Embeddings embed(const std::vector<std::string>& texts,
                   const std::function<void(size_t done, size_t total)>& progress = {});
  // A cross-encoder's scores of text pairs ([CLS] a [SEP] b [SEP], b's tokens type 1; a
  // pair cut to max_tokens as transformers' longest_first cuts it): its one-label
  // classifier's logit through a sigmoid, as sentence-transformers' CrossEncoder.predict
  // gives it. A model without a one-label classifier, or without WordPiece, is refused by name.
  std::vector<float> score_pairs(const std::vector<std::pair<std::string, std::string>>& pairs,
                                 const std::function<void(size_t done, size_t total)>& progress = {});
  uint32_t batch_size = 32;
  // Per-dispatch GPU times of the last batch (Encoder::set_profile).
  void set_profile(bool on);
  const std::string& profile_report() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace vkf
