#pragma once
// Decoding as Hugging Face's generate() does it for encoder-decoders (transformers 4.44,
// checked against its outputs in tests/model/hugging_face_test.cpp): greedy search and
// beam search (its BeamSearchScorer: 2 x num_beams candidates a step, EOS candidates
// ranked below num_beams dropped, hypotheses scored sum_logprobs / length^length_penalty,
// early_stopping true / false / "never"), both with its logits processors (no-repeat
// n-grams, bad words, min length, forced BOS and EOS) applied on the host.
#include "decoding.hpp"

namespace vkf::model {

// Every source together; each sequence its tokens after the start token, EOS included.
std::vector<std::vector<uint32_t>> hf_greedy(DecoderGraph& g, const std::vector<std::vector<uint32_t>>& sources,
                                             const GenerateOptions& o);
// One source, o.beam beams.
std::vector<uint32_t> hf_beam(DecoderGraph& g, const std::vector<uint32_t>& source, const GenerateOptions& o);

}  // namespace vkf::model
