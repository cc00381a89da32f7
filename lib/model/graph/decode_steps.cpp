// The replayed decode steps of DecoderGraph (decoder_graph.hpp): one step recorded once
// and replayed at every position (step()), or many per submit with the token choice,
// EOS and positions on the GPU (start_steps(), run_steps()); the repetition penalty's
// seen tokens, and beam search's reordering of the cache.
#include <algorithm>

#include "buffers.hpp"
#include "decoder_graph.hpp"
#include "vkformer/tensor_io.hpp"

namespace vkf::model {

void DecoderGraph::ensure_step_buffers() {
  ensure(ctx_, step_state_, 1, sizeof(DecodeStep::State), "decode_step", BufferUse::HostAccess);
  ensure(ctx_, tgt_ids_, batch_, 4, "tgt_ids", BufferUse::HostAccess);                                                      // [B]
  ensure(ctx_, logits_, uint64_t(batch_) * m_.config.tgt_vocab_size, dtype_bytes(m_.dtype), "logits");  // [B, V]
  ensure(ctx_, next_ids_, batch_, 4, "next_ids", BufferUse::HostAccess);                                                    // [B]
}

void DecoderGraph::set_repetition_penalty(float penalty, const std::vector<std::vector<uint32_t>>& seen) {
  penalty_ = penalty;
  if (penalty == 1.0f) return;
  const uint32_t V = m_.config.tgt_vocab_size, words = Ops::repetition_penalty_words(V);
  if (seen.size() > batch_) throw Error("repetition penalty: more sequences than the batch");
  std::vector<uint32_t> bits(uint64_t(batch_) * words, 0);
  for (size_t b = 0; b < seen.size(); ++b)
    for (uint32_t t : seen[b]) {
      if (t >= V) throw Error("repetition penalty: token id " + std::to_string(t) + " is outside the vocabulary");
      bits[b * words + t / 32] |= 1u << (t % 32);
    }
  const bool grows = !seen_ || seen_.size() < bits.size() * 4;
  ensure(ctx_, seen_, bits.size(), 4, "seen_tokens", BufferUse::HostAccess);  // [B, words]
  if (grows) step_list_.reset(), steps_list_.reset();  // they bound the old buffer
  ctx_.upload(seen_, bits.data(), bits.size() * 4);
}

void DecoderGraph::record_choice(CommandList& cl, const std::optional<Sampling>& sampling, const DecodeStep& step) {
  const uint32_t V = m_.config.tgt_vocab_size;
  if (penalty_ != 1.0f)  // the step's input token (the last one chosen) joins its sequence's seen tokens
    ops_.repetition_penalty(cl, logits_.view(), seen_.view(), tgt_ids_.view(), batch_, V, penalty_);  // logits [B, V]
  if (sampling)
    ops_.sample(cl, *sampling, logits_.view(), next_ids_.view(), batch_, V, step);  // next_ids [B]
  else
    ops_.argmax(cl, logits_.view(), next_ids_.view(), batch_, V, true);  // next_ids [B], overflow flagged
}

std::vector<uint32_t> DecoderGraph::step(uint32_t t, const std::vector<uint32_t>& ids, std::vector<float>* logits_out,
                                         const std::optional<Sampling>& sampling) {
  const uint32_t V = m_.config.tgt_vocab_size;
  if (ids.size() != batch_) throw Error("step: expected one id per sequence");
  if (t >= cache_.capacity()) throw Error("step: position " + std::to_string(t) + " is past the decoding capacity");
  check_target_ids(ids);
  if (!step_list_ || step_sampling_ != sampling || step_penalty_ != penalty_) {
    step_list_.reset();
    ensure_step_buffers();
    step_list_.emplace(begin());
    const DecodeStep step{.state = step_state_.view(), .max_step = cache_.capacity() - 1};
    record_decoder(*step_list_, {.n = 1, .step = step});
    record_choice(*step_list_, sampling, step);
    step_sampling_ = sampling;
    step_penalty_ = penalty_;
  }
  // Token t sits at position t, joins the cache at row t and attends over rows [0, t].
  const DecodeStep::State state{.step = t, .position = t, .key_count = t + 1};
  ctx_.upload(step_state_, &state, sizeof state);
  ctx_.upload(tgt_ids_, ids.data(), batch_ * 4);
  finish(*step_list_, decoder_report);
  if (logits_out) *logits_out = download_floats(ctx_, logits_, uint64_t(batch_) * V, m_.dtype);
  std::vector<uint32_t> next(batch_);
  ctx_.download(next_ids_, next.data(), batch_ * 4);
  return next;
}

void DecoderGraph::start_steps(uint32_t t0, const std::vector<uint32_t>& ids, bool stop_at_eos,
                               const std::optional<Sampling>& sampling) {
  const ModelConfig& c = m_.config;
  const uint32_t cap = cache_.capacity();
  if (ids.size() != batch_) throw Error("decoding: expected one id per sequence");
  if (t0 >= cap) throw Error("decoding: position " + std::to_string(t0) + " is past the decoding capacity");
  check_target_ids(ids);
  if (!steps_list_ || steps_stop_at_eos_ != stop_at_eos || steps_sampling_ != sampling || steps_penalty_ != penalty_) {
    steps_list_.reset();
    ensure_step_buffers();
    ensure(ctx_, done_, batch_, 4, "done", BufferUse::HostAccess);
    ensure(ctx_, tokens_, uint64_t(cap) * batch_, 4, "tokens", BufferUse::HostAccess);
    // One decode step, replayed back to back many times per submit: everything that
    // changes from step to step (the inputs, the position, which sequences are done)
    // is written by the step itself.
    steps_list_.emplace(ctx_.command_list({.repeatable = true}));
    const DecodeStep step{.state = step_state_.view(), .max_step = cap - 1};
    record_decoder(*steps_list_, {.n = 1, .step = step});
    record_choice(*steps_list_, sampling, step);
    ops_.decode_advance(*steps_list_, {.batch = batch_, .capacity = cap, .eos_id = c.eos_id, .stop_at_eos = stop_at_eos},
                        next_ids_.view(), tgt_ids_.view(), done_.view(), tokens_.view(), step);
    steps_stop_at_eos_ = stop_at_eos;
    steps_sampling_ = sampling;
    steps_penalty_ = penalty_;
  }
  const DecodeStep::State state{.step = t0, .position = t0, .key_count = t0 + 1};
  ctx_.upload(step_state_, &state, sizeof state);
  ctx_.upload(tgt_ids_, ids.data(), batch_ * 4);
  const std::vector<uint32_t> zeros(batch_, 0);
  ctx_.upload(done_, zeros.data(), batch_ * 4);
  steps_t_ = t0;
}

std::vector<std::vector<uint32_t>> DecoderGraph::run_steps(uint32_t n) {
  if (!steps_list_) throw Error("decoding: start_steps() first");
  if (n == 0 || steps_t_ + n > cache_.capacity())
    throw Error("decoding: " + std::to_string(n) + " steps from position " + std::to_string(steps_t_) +
                " do not fit the decoding capacity " + std::to_string(cache_.capacity()));
  steps_list_->submit(n);
  std::vector<uint32_t> flat(uint64_t(n) * batch_);
  ctx_.download(tokens_, flat.data(), flat.size() * 4, uint64_t(steps_t_) * batch_ * 4);  // rows [t, t + n)
  steps_t_ += n;
  std::vector<std::vector<uint32_t>> rows(n);
  for (uint32_t i = 0; i < n; ++i) rows[i].assign(flat.begin() + uint64_t(i) * batch_, flat.begin() + uint64_t(i + 1) * batch_);
  return rows;
}

void DecoderGraph::reorder(const std::vector<uint32_t>& parent, uint32_t filled) {
  cache_.reorder(ctx_, parent, filled);
}

}  // namespace vkf::model
