#pragma once
// Decoding as Hugging Face's generate() does it (transformers 4.36-4.44, checked against
// its outputs in tests/model/hugging_face_test.cpp and hf_generate_test.cpp): greedy
// search and beam search (its BeamSearchScorer: max(2, 1 + EOS ids) x num_beams candidates
// a step, EOS candidates ranked below num_beams dropped, hypotheses scored sum_logprobs /
// generated_length^length_penalty, early_stopping true / false / "never",
// num_return_sequences best first), both with its logits processors (repetition penalty,
// no-repeat n-grams, bad words, min length, min new tokens, forced BOS and EOS) applied
// on the host, for encoder-decoders and decoder-only models alike.
//
// Each sequence is seen as generate() holds it (input_ids): an encoder-decoder's start
// token, or a decoder-only prompt left-padded with the model's pad id to its batch's
// longest, then the tokens chosen so far. Processors that count length or look back (min
// length, no-repeat n-grams, the repetition penalty) so see what they see there; the
// model itself computes each prompt as it would alone, as transformers' attention mask
// makes it.
#include "decoding.hpp"

namespace vkf::model {

// Whether generate() needs the host between steps: a processor the GPU's steps do not
// apply (all but the repetition penalty), or beams.
bool needs_hf_host_decoding(const GenerateOptions& o);

// Encoder-decoders: every source together, greedy or (temperature > 0) sampled as
// host_sampling.hpp draws; each sequence its tokens after the start token, EOS included.
std::vector<std::vector<uint32_t>> hf_greedy(DecoderGraph& g, const std::vector<std::vector<uint32_t>>& sources,
                                             const GenerateOptions& o);
// One source, o.beam beams: o.num_return_sequences outputs, best first.
std::vector<std::vector<uint32_t>> hf_beam(DecoderGraph& g, const std::vector<uint32_t>& source, const GenerateOptions& o);

// Decoder-only models: greedy or sampled with the processors, every prompt together (left-padded);
// each output its new tokens, EOS included. *prompt_ms as continue_prompts gives it.
std::vector<std::vector<uint32_t>> hf_continue(DecoderGraph& g, const std::vector<std::vector<uint32_t>>& prompts,
                                               const GenerateOptions& o, double* prompt_ms = nullptr);
// Beam search for each prompt in turn (seen padded to the longest, as in generate()'s
// batch): o.num_return_sequences outputs per prompt, best first, prompt by prompt.
// *prompt_ms: the prompt passes' time (each prompt read for its beams).
std::vector<std::vector<uint32_t>> hf_continue_beam(DecoderGraph& g, const std::vector<std::vector<uint32_t>>& prompts,
                                                    const GenerateOptions& o, double* prompt_ms = nullptr);

}  // namespace vkf::model
