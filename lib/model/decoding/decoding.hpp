#pragma once
// Decoding strategies over an encoded graph: greedy (argmax on the GPU), sampling and
// beam search (on the host, over downloaded logits).
#include "decoder_graph.hpp"

namespace vkf::model {

// Between two submits: a cancelled generation stops here (throws vkf::Cancelled).
void check_cancel(const GenerateOptions& o);
// log(softmax(logits)) in double precision.
std::vector<double> log_softmax(const float* logits, uint32_t n);

// Whether an output ends with its last token: the model's EOS or one of o.eos_ids (with
// stop_at_eos), or o.stop says so.
bool ends_output(const GenerateOptions& o, const ModelConfig& c, size_t output, const std::vector<uint32_t>& tokens);
// Greedy or (temperature > 0) sampling, every source together; each stops at its own EOS.
std::vector<std::vector<uint32_t>> decode_greedy_or_sampled(DecoderGraph& g,
                                                            const std::vector<std::vector<uint32_t>>& sources,
                                                            const GenerateOptions& o);
// A decoder-only model: the prompts continued together by greedy or sampled steps, left-
// padded to the longest (each computes what it would alone); the new tokens only, EOS
// included when produced. *prompt_ms (when given): the time from the call until every
// prompt's first new token was known (the prompt pass over all but each prompt's last
// token, then the first step, which reads that token and chooses the first new one).
std::vector<std::vector<uint32_t>> continue_prompts(DecoderGraph& g, const std::vector<std::vector<uint32_t>>& prompts,
                                                    const GenerateOptions& o, double* prompt_ms = nullptr);
// A prompt the model can continue by new_tokens: not empty, ids in the vocabulary, and
// within n_positions; else an error naming the prompt.
// Decoding's guard against overflow: logits that are NaN or infinite (activations past
// fp16's range in fp16 storage) end the run with an error naming the output and token,
// never pass as a choice (GPU choices carry Ops::kNonFiniteToken for them).
[[noreturn]] void throw_not_finite(const DecoderGraph& s, size_t output, size_t token);
void check_finite(const DecoderGraph& s, const std::vector<float>& logits, size_t token);  // [rows, V]: row = output

void check_prompt(const ModelConfig& c, const std::vector<uint32_t>& prompt, size_t index, uint32_t new_tokens);
// Beam search of width o.beam over one source: the best finished hypothesis by
// score / length^length_penalty.
std::vector<uint32_t> decode_beam(DecoderGraph& g, const std::vector<uint32_t>& source, const GenerateOptions& o);

}  // namespace vkf::model
