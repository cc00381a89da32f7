#pragma once
// A model's decoder stack as recorded GPU work, with the memory it runs in: for an
// encoder-decoder, encode once per batch of sources (the EncoderGraph, then each layer's
// cross-attention keys and values from its last hidden state); for a decoder-only model,
// read prompts; then decode (teacher-forced) or step (one token per sequence, a command
// list recorded once and replayed at every position).
#include <optional>
#include <string>

#include "decoder_layer.hpp"
#include "encoder_graph.hpp"
#include "kv_cache.hpp"
#include "model_impl.hpp"

namespace vkf::model {

class DecoderGraph {
 public:
  explicit DecoderGraph(const Model::Impl& model);

  // Encodes B sources padded to S tokens, each repeated `copies` times (beams): leaves
  // every decoder layer's cross-attention keys/values in the cache, and room for
  // target_capacity positions of self-attention.
  void encode(const std::vector<std::vector<uint32_t>>& sources, uint32_t copies, uint32_t target_capacity);
  // A decoder-only model: room for `batch` sequences of target_capacity positions and no
  // source; decode() then reads prompts and step()/start_steps() continue them.
  void begin_prompts(uint32_t batch, uint32_t target_capacity);
  // A decoder-only batch of prompts of different lengths, left-padded to one (after
  // begin_prompts): sequence b's first pads[b] rows are padding, masked as keys in
  // every pass and step that follows, and its positions start pads[b] rows late, so each
  // sequence computes what it would alone. Left, not right: every sequence then takes its
  // next token at the same row, so one recorded step (one step counter, one cache row)
  // serves the batch, as transformers' decoder-only generate() expects left padding.
  // prompt_len: the rows prefill() will fill (its keys' mask). All zero: no padding.
  void set_left_padding(const std::vector<uint32_t>& pads, uint32_t prompt_len);
  // Teacher forcing: n tokens per sequence at positions [t0, t0 + n), appended to the
  // cache; the logits of every token, [batch * n, tgt_vocab].
  std::vector<float> decode(uint32_t t0, uint32_t n, const std::vector<uint32_t>& ids);
  // The same pass for its cache alone (a prompt before decode steps continue it): no
  // logits but each sequence's last token's, which stay on the GPU.
  void prefill(uint32_t t0, uint32_t n, const std::vector<uint32_t>& ids);
  // One token per sequence at position t: the argmax of each sequence's logits (or a
  // token drawn from them on the GPU, as `sampling` says), and the logits themselves
  // when logits_out is given (beams).
  std::vector<uint32_t> step(uint32_t t, const std::vector<uint32_t>& ids, std::vector<float>* logits_out,
                             const std::optional<Sampling>& sampling = std::nullopt);
  // Greedy or sampled decoding without the host in the loop: start_steps() sets the
  // first inputs (one per sequence, at position t0); each run_steps(n) then runs n steps
  // in one submit - argmax or sampling, EOS and positions on the GPU - and returns their
  // tokens, [n][batch]. A step draws the same token here as step() does at its position.
  void start_steps(uint32_t t0, const std::vector<uint32_t>& ids, bool stop_at_eos,
                   const std::optional<Sampling>& sampling);
  std::vector<std::vector<uint32_t>> run_steps(uint32_t n);
  // The repetition penalty the next start_steps()/step() records (1: none), and the
  // tokens each sequence holds already (a decoder-only model's prompt); each step's input
  // token joins them on the GPU.
  void set_repetition_penalty(float penalty, const std::vector<std::vector<uint32_t>>& seen);
  // Beam search: sequence k continues from sequence parent[k] (positions [0, filled)).
  void reorder(const std::vector<uint32_t>& parent, uint32_t filled);

  const ModelConfig& config() const { return m_.config; }
  DType precision() const { return m_.dtype; }
  uint32_t batch() const { return batch_; }
  uint32_t capacity() const { return cache_.capacity(); }
  // Dispatches one recorded decode step spends in decoder layers, per layer.
  double dispatches_per_decoder_layer() const { return dispatches_per_layer_; }
  double dispatches_per_encoder_layer() const { return encoder_dispatches_per_layer_; }

  bool profile = false;
  // The GPU time one submit may take (0: no bound). Greedy decoding sizes its submits by
  // it (decoding.cpp); encode() splits the encoder into pieces of whole layers that fit it.
  double submit_budget_ms = 2.0;
  std::string encoder_report, decoder_report;  // per-dispatch GPU times (profile)
  std::string prompt_report;                   // a decoder-only model's last prompt pass (prefill)
  double encode_ms = 0;                        // wall time of the last encode
  uint32_t encode_submits = 0;                 // submits of the last encode (pieces under a budget)
  double encode_gpu_ms = 0;                    // its GPU time, first dispatch to last of each piece (profile; else 0)

 private:
  struct DecoderOptions {
    uint32_t t0 = 0, n = 1;
    bool logits_of_every_token = false;  // else only each sequence's last token's (what predicts the next)
    std::optional<DecodeStep> step;      // replayed at the position in step_state_
  };
  void record_decoder(CommandList& cl, const DecoderOptions& o);
  void check_target_ids(const std::vector<uint32_t>& ids) const;
  // Checks n tokens per sequence at [t0, t0 + n) against the capacity and vocabulary, and uploads them.
  void upload_tokens(uint32_t t0, uint32_t n, const std::vector<uint32_t>& ids);
  void ensure_step_buffers();
  // Working memory for B = batch_ sequences: a source of S tokens, target_capacity positions.
  void reserve(uint32_t S, uint32_t target_capacity);  // what a recorded decode step (step() or greedy) reads and writes
  LayerRecorder recorder(CommandList& cl, uint32_t rows);
  CommandList begin();
  void finish(CommandList& cl, std::string& report);

  const Model::Impl& m_;
  Context& ctx_;
  Ops ops_;

  uint32_t batch_ = 0, src_len_ = 0;  // sequences, padded source length
  Buffer src_ids_, src_mask_, tgt_ids_;  // [B, S] uint32, [B, S] additive mask, [B, n] uint32
  Buffer x_, y_, attn_, queries_, hidden_, qkv_, memory_, logits_, next_ids_;
  Buffer row_stats_[2];  // the fused encoder's (EncoderBuffers::stats)
  // set_left_padding's: each sequence's padding ([B] uint32), and its keys' additive masks
  // for prefill ([B, prompt_mask_len_]) and for decode steps ([B, capacity]).
  std::vector<uint32_t> left_pad_;  // empty: none
  Buffer pad_shift_, prompt_mask_, step_mask_;
  uint32_t prompt_mask_len_ = 0;
  KvCache cache_;
  Buffer step_state_;                     // DecodeStep::State
  Buffer attention_scratch_;              // decode steps' decode_attention: tickets and partial results
  Buffer dequantized_;  // Model::Impl::dequantized_values of the storage type, where the model has weights in blocks
  Buffer norm_tickets_;                   // [1] uint32, zero: post-norm products that normalise their output
  std::optional<CommandList> step_list_;  // recorded by step(), dropped by encode()
  std::optional<Sampling> step_sampling_;  // what step_list_ chooses tokens by (none: argmax)
  Buffer done_, tokens_;                   // replayed steps: [B] uint32 flags, [capacity, B] uint32
  std::optional<CommandList> steps_list_;  // recorded by start_steps(), dropped by encode()
  uint32_t steps_t_ = 0;                   // the position the next replayed step decodes
  bool steps_stop_at_eos_ = true;          // what steps_list_ was recorded with
  std::optional<Sampling> steps_sampling_;
  float penalty_ = 1.0f, step_penalty_ = 1.0f, steps_penalty_ = 1.0f;  // set, and what each list was recorded with
  Buffer seen_;  // [B, Ops::repetition_penalty_words(V)] uint32 bitmaps: the tokens each sequence holds
  // The token choice at the end of a recorded step: argmax, or a draw.
  void record_choice(CommandList& cl, const std::optional<Sampling>& sampling, const DecodeStep& step);
  double dispatches_per_layer_ = 0;
  double encoder_dispatches_per_layer_ = 0;
  std::optional<EncoderGraph> encoder_;  // an encoder-decoder's encoder stack
};

}  // namespace vkf::model
