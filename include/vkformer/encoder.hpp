#pragma once
// Running an encoder-only model (ModelKind::EncoderOnly: BERT): token ids in, the last
// hidden state, and where the checkpoint has them the pooler's output for the first token
// and the head's logits (a masked-LM head's per token, a classifier's per sequence).
#include <memory>
#include <string>
#include <vector>

#include "vkformer/model.hpp"

namespace vkf {

struct EncoderOutput {
  uint32_t tokens = 0, width = 0;
  std::vector<float> hidden;  // [tokens, width]: the last hidden state
  std::vector<float> pooled;  // [width]: tanh(W h[0] + b), BERT's pooler output; empty without one
  // The head's: [tokens, vocabulary] (masked LM) or [1, labels] (classifier,
  // ModelConfig::labels names them); empty without a head.
  uint32_t logits_rows = 0, logits_cols = 0;
  std::vector<float> logits;
};

class Encoder {
 public:
  // A model with a decoder is refused by name (Session runs it).
  explicit Encoder(std::shared_ptr<const Model> model);
  ~Encoder();
  Encoder(const Encoder&) = delete;
  Encoder& operator=(const Encoder&) = delete;

  // One sequence: ids within the vocabulary, 1 to max_position of them; token types (empty:
  // all 0) one per id, below ModelConfig::token_types. Bad input is a named error.
  EncoderOutput encode(const std::vector<uint32_t>& ids, const std::vector<uint32_t>& token_types = {});
  // Several sequences in one pass, each as encode() would give it: padded to the longest
  // on the device, the padding's keys masked out of every item's attention, each output
  // cut back to its own tokens. token_types: empty, or one list per sequence (empty: all 0).
  std::vector<EncoderOutput> encode_batch(const std::vector<std::vector<uint32_t>>& ids,
                                          const std::vector<std::vector<uint32_t>>& token_types = {});

  // Per-dispatch GPU times (timestamps) of each later pass, in profile_report().
  void set_profile(bool on);
  const std::string& profile_report() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace vkf
