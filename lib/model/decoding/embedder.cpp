// The public Embedder: texts to WordPiece ids (cut to max_tokens), batches through the
// Encoder, then sentence-transformers' pooling and normalisation of each text's rows on
// the host, in double precision.
#include "vkformer/embedder.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "hf_text.hpp"
#include "model_impl.hpp"
#include "sentence_transformers.hpp"
#include "vkformer/encoder.hpp"
#include "vkformer/error.hpp"
#include "wordpiece_tokenizer.hpp"

namespace vkf {

namespace {

std::unique_ptr<Tokenizer> tokenizer_of(const ModelFiles& files) {
  bool any = false;
  for (const std::string& name : Tokenizer::files_for_model(files)) any = any || files.has(name);
  if (!any)
    throw Error("model " + files.label() + " has no tokenizer (tokenizer.json or vocab.txt), so it embeds no text: "
                "`vkformer encode --ids` runs it on token ids",
                ErrorKind::InvalidInput);
  return Tokenizer::for_model(files);
}

}  // namespace

// Text as the tokenizers take it: UTF-8 (strip_python reads code points) without NUL.
static std::string_view checked(const std::string& text) {
  if (const size_t bad = model::invalid_utf8_at(text); bad != std::string::npos)
    fail_invalid_input("the text is not valid UTF-8 (byte " + std::to_string(bad) + ")");
  return text;
}

struct Embedder::Impl {
  std::shared_ptr<const Model> model;
  EmbedderConfig config;
  std::unique_ptr<Tokenizer> tokenizer;
  const model::WordPieceTokenizer* wordpiece = nullptr;
  Encoder encoder;

  uint32_t suffix = 0;  // another tokenizer's (RoBERTa's </s>): kept last where a text is cut

  Impl(std::shared_ptr<const Model> m, const ModelFiles& files)
      : model(m),
        config(model::read_sentence_transformers(files, m->config().d_model, m->config().max_position)),
        tokenizer(tokenizer_of(files)),
        encoder(m) {
    wordpiece = dynamic_cast<const model::WordPieceTokenizer*>(tokenizer.get());
    if (!wordpiece) {
      // One token either side of the text (RoBERTa's <s> ... </s>): a text is cut before
      // the last, as transformers' truncation cuts it.
      const std::vector<uint32_t> around = tokenizer->encode("");
      if (around.size() != 2)
        throw Error("Embedder: model " + files.label() + "'s tokenizer (" + tokenizer->describe() + ") puts " +
                        std::to_string(around.size()) +
                        " tokens around a text; vkformer embeds with tokenizers that put one either side",
                    ErrorKind::Unsupported);
      suffix = around[1];
    }
  }

  // A text's ids, cut to max_tokens (the cut said in `truncated`).
  std::vector<uint32_t> ids_of(std::string_view text, bool& truncated) const {
    if (wordpiece) {
      model::WordPieceIds w = wordpiece->encode_one(text, config.max_tokens);
      truncated = w.truncated;
      return std::move(w.ids);
    }
    std::vector<uint32_t> ids = tokenizer->encode(text);
    truncated = ids.size() > config.max_tokens;
    if (truncated) ids.resize(config.max_tokens - 1), ids.push_back(suffix);
    return ids;
  }

  // One text's embedding from its rows h [n, D]: the pooling modes side by side.
  void pool(const EncoderOutput& o, float* out) const {
    const uint32_t n = o.tokens, D = o.width;
    std::vector<double> e;
    e.reserve(config.width);
    for (Pooling p : config.pooling) {
      for (uint32_t d = 0; d < D; ++d) {
        double v = 0;
        switch (p) {
          case Pooling::Cls: v = o.hidden[d]; break;
          case Pooling::Max:
            v = -INFINITY;
            for (uint32_t t = 0; t < n; ++t) v = std::max(v, double(o.hidden[size_t(t) * D + d]));
            break;
          case Pooling::Mean:
          case Pooling::MeanSqrtLen:
            for (uint32_t t = 0; t < n; ++t) v += o.hidden[size_t(t) * D + d];
            v /= p == Pooling::Mean ? double(n) : std::sqrt(double(n));
            break;
        }
        e.push_back(v);
      }
    }
    double norm = 1;
    if (config.normalize) {  // torch.nn.functional.normalize: x / max(|x|, 1e-12)
      norm = 0;
      for (double v : e) norm += v * v;
      norm = std::max(std::sqrt(norm), 1e-12);
    }
    for (size_t i = 0; i < e.size(); ++i) out[i] = float(e[i] / norm);
  }
};

Embedder::Embedder(std::shared_ptr<const Model> model, const ModelFiles& files) {
  if (!model) throw Error("Embedder: no model");
  if (model->config().kind != ModelKind::EncoderOnly)
    throw Error("Embedder: model '" + model->config().architecture + "' is " + model->config().kind_name() +
                    ": sentence embeddings come from encoder-only models (BERT)",
                ErrorKind::InvalidInput);
  impl_ = std::make_unique<Impl>(std::move(model), files);
}
Embedder::~Embedder() = default;

const EmbedderConfig& Embedder::config() const { return impl_->config; }
void Embedder::set_profile(bool on) { impl_->encoder.set_profile(on); }
const std::string& Embedder::profile_report() const { return impl_->encoder.profile_report(); }

Embeddings Embedder::embed(const std::vector<std::string>& texts, const std::function<void(size_t, size_t)>& progress) {
  Impl& s = *impl_;
  if (batch_size == 0) fail_invalid_input("embed: batch_size is 0");
  Embeddings r;
  r.count = uint32_t(texts.size()), r.width = s.config.width;
  if (texts.size() > (1u << 30)) fail_invalid_input("embed: more than 2^30 texts");
  r.values.assign(size_t(r.count) * r.width, 0.0f);
  // Each text stripped (as sentence-transformers does) and cut to max_tokens.
  std::vector<std::vector<uint32_t>> ids(texts.size());
  for (size_t i = 0; i < texts.size(); ++i) {
    try {
      bool truncated = false;
      ids[i] = s.ids_of(model::strip_python(checked(texts[i])), truncated);
      if (truncated) r.truncated.push_back(i);
    } catch (const Error& e) {
      throw Error("embed: text " + std::to_string(i) + ": " + e.what(), e.kind());
    }
  }
  // Longest first, so a batch's texts are of like length and pad little.
  std::vector<size_t> order(texts.size());
  std::iota(order.begin(), order.end(), size_t(0));
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return ids[a].size() > ids[b].size(); });
  for (size_t first = 0; first < order.size(); first += batch_size) {
    const size_t count = std::min<size_t>(batch_size, order.size() - first);
    std::vector<std::vector<uint32_t>> batch;
    for (size_t k = 0; k < count; ++k) batch.push_back(ids[order[first + k]]);
    const std::vector<EncoderOutput> outs = s.encoder.encode_batch(batch);
    for (size_t k = 0; k < count; ++k) s.pool(outs[k], r.values.data() + order[first + k] * r.width);
    if (progress) progress(first + count, order.size());
  }
  return r;
}

std::vector<float> Embedder::score_pairs(const std::vector<std::pair<std::string, std::string>>& pairs,
                                        const std::function<void(size_t, size_t)>& progress) {
  Impl& s = *impl_;
  const ModelConfig& c = s.model->config();
  if (c.labels.size() != 1)
    throw Error("score_pairs: model '" + c.architecture + "' has " +
                    (c.labels.empty() ? std::string("no classifier") : std::to_string(c.labels.size()) + " labels") +
                    "; a cross-encoder's is one label (num_labels 1), its score",
                ErrorKind::Unsupported);
  if (!s.wordpiece)
    throw Error("score_pairs: text pairs are tokenized with WordPiece; this model's tokenizer is " + s.tokenizer->describe(),
                ErrorKind::Unsupported);
  if (batch_size == 0) fail_invalid_input("score_pairs: batch_size is 0");
  std::vector<model::WordPieceIds> ids(pairs.size());
  for (size_t i = 0; i < pairs.size(); ++i) {
    try {
      ids[i] = s.wordpiece->encode_pair(model::strip_python(checked(pairs[i].first)), model::strip_python(checked(pairs[i].second)),
                                        s.config.max_tokens);
    } catch (const Error& e) {
      throw Error("score_pairs: pair " + std::to_string(i) + ": " + e.what(), e.kind());
    }
  }
  std::vector<size_t> order(pairs.size());
  std::iota(order.begin(), order.end(), size_t(0));
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return ids[a].ids.size() > ids[b].ids.size(); });
  std::vector<float> scores(pairs.size());
  for (size_t first = 0; first < order.size(); first += batch_size) {
    const size_t count = std::min<size_t>(batch_size, order.size() - first);
    std::vector<std::vector<uint32_t>> batch, types;
    for (size_t k = 0; k < count; ++k) batch.push_back(ids[order[first + k]].ids), types.push_back(ids[order[first + k]].types);
    const std::vector<EncoderOutput> outs = s.encoder.encode_batch(batch, types);
    for (size_t k = 0; k < count; ++k) scores[order[first + k]] = float(1.0 / (1.0 + std::exp(-double(outs[k].logits.at(0)))));
    if (progress) progress(first + count, order.size());
  }
  return scores;
}

}  // namespace vkf
