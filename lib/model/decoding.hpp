#pragma once
// Decoding strategies over an encoded graph: greedy (argmax on the GPU), sampling and
// beam search (on the host, over downloaded logits).
#include "seq2seq_graph.hpp"

namespace vkf::model {

// Between two submits: a cancelled generation stops here (throws vkf::Cancelled).
void check_cancel(const GenerateOptions& o);
// log(softmax(logits)) in double precision.
std::vector<double> log_softmax(const float* logits, uint32_t n);

// Greedy or (temperature > 0) sampling, every source together; each stops at its own EOS.
std::vector<std::vector<uint32_t>> decode_greedy_or_sampled(Seq2SeqGraph& g,
                                                            const std::vector<std::vector<uint32_t>>& sources,
                                                            const GenerateOptions& o);
// Beam search of width o.beam over one source: the best finished hypothesis by
// score / length^length_penalty.
std::vector<uint32_t> decode_beam(Seq2SeqGraph& g, const std::vector<uint32_t>& source, const GenerateOptions& o);

}  // namespace vkf::model
