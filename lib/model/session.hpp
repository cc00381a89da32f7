#pragma once
// The encoder and decoder as recorded GPU work, with the memory they run in.
#include <optional>

#include "model/seq2seq.hpp"

namespace vkf {

struct Session::Impl {
  explicit Impl(std::shared_ptr<const Model> model);

  // Encodes B sources padded to S tokens (each repeated `copies` times, for beams):
  // leaves memory and every decoder layer's cross-attention keys/values on the GPU.
  void encode(const std::vector<std::vector<uint32_t>>& sources, uint32_t copies, uint32_t target_capacity);
  // Runs the decoder over n new tokens per sequence at positions [t0, t0 + n), appending
  // to the self-attention caches; returns the logits of every new token ([rows, tgt_vocab]).
  std::vector<float> decode(uint32_t t0, uint32_t n, const std::vector<uint32_t>& ids);
  // One decoding step for every sequence at position t: a command list recorded once per
  // encode and re-submitted, the position read on the GPU from a step counter. Returns
  // the argmax tokens; the logits when want_logits (sampling, beams).
  std::vector<uint32_t> step(uint32_t t, const std::vector<uint32_t>& ids, std::vector<float>* logits_out);
  // Beam search: sequence k continues from sequence parent[k] (caches are reordered).
  void reorder(const std::vector<uint32_t>& parent, uint32_t t_filled);

  std::shared_ptr<const Model> model;
  const Model::Impl& m;
  Context& ctx;
  Ops ops;
  bool profile = false;
  std::string encoder_report, decoder_report;

  uint32_t batch = 0, src_len = 0, capacity = 0;  // sequences, padded source length, cache length
  Buffer src_ids, src_mask, tgt_ids;
  Buffer x, y, attn, queries, hidden, qkv, memory, logits, next_ids;
  std::vector<Buffer> cross_kv, self_cache, spare_cache;
  Buffer step_counter;
  std::optional<CommandList> step_list;  // recorded by step(), dropped by encode()

 private:
  Buffer& ensure(Buffer& b, uint64_t elements, const char* name, uint32_t elem_bytes = 0);
  BufferView at(const Buffer& b, uint64_t element) const;
  void linear(CommandList& cl, const Linear& l, const BufferView& x, uint32_t rows, const BufferView& y,
              Activation act = Activation::None, std::optional<BufferView> residual = {});
  void norm(CommandList& cl, const Norm& n, const BufferView& x, uint32_t rows, const BufferView& y);
  void decoder_layer(CommandList& cl, const DecoderLayer& l, size_t index, uint32_t t0, uint32_t n, bool stepped);
  void record_decoder(CommandList& cl, uint32_t t0, uint32_t n, bool all_rows, bool stepped);
  void check_ids(const std::vector<uint32_t>& ids) const;
  CommandList begin();
  void finish(CommandList& cl, std::string& report);
};

}  // namespace vkf
