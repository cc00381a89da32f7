// The public Session: checks what callers ask for, then runs the graph and a decoder.
#include "decoding.hpp"

namespace vkf {

struct Session::Impl {
  explicit Impl(std::shared_ptr<const Model> m) : model(std::move(m)), graph(model->impl()) {}
  std::shared_ptr<const Model> model;  // keeps the weights the graph reads alive
  model::Seq2SeqGraph graph;
};

Session::Session(std::shared_ptr<const Model> model) : impl_(std::make_unique<Impl>(std::move(model))) {}
Session::~Session() = default;
Session::Session(Session&&) noexcept = default;

void Session::set_profile(bool on) { impl_->graph.profile = on; }

std::string Session::profile_report() const {
  return "encoder:\n" + impl_->graph.encoder_report + "\nlast decoder step:\n" + impl_->graph.decoder_report;
}

std::vector<float> Session::score(const std::vector<uint32_t>& src, const std::vector<uint32_t>& tgt) {
  if (tgt.empty()) throw Error("score: the target is empty (it starts with BOS)");
  model::Seq2SeqGraph& g = impl_->graph;
  g.encode({src}, 1, uint32_t(tgt.size()));
  return g.decode(0, uint32_t(tgt.size()), tgt);
}

std::vector<std::vector<uint32_t>> Session::generate(const std::vector<std::vector<uint32_t>>& sources,
                                                     const GenerateOptions& o) {
  const ModelConfig& c = impl_->model->config();
  if (o.max_new_tokens == 0) return std::vector<std::vector<uint32_t>>(sources.size());
  if (o.temperature < 0 || !(o.top_p > 0 && o.top_p <= 1))
    throw Error("generate: temperature must be >= 0 and top_p in (0, 1]");
  // Positions 0 (BOS) .. max_new_tokens - 1 are fed to the decoder.
  if (o.max_new_tokens > c.max_position)
    throw Error("generate: max_new_tokens " + std::to_string(o.max_new_tokens) +
                " needs more positions than the model's max_position " + std::to_string(c.max_position));
  if (o.beam > 1) {
    std::vector<std::vector<uint32_t>> results;
    for (const auto& src : sources) results.push_back(model::decode_beam(impl_->graph, src, o));
    return results;
  }
  return model::decode_greedy_or_sampled(impl_->graph, sources, o);
}

}  // namespace vkf
