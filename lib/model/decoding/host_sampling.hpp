#pragma once
// Sampling on the host, where generate()'s processors run there (Hugging Face models
// with no-repeat n-grams, bad words, minimum lengths or forced tokens): transformers'
// warpers (temperature, then top-k keeping every token tied with the k-th, then top-p
// dropping each token whose more likely tokens already hold top_p of the mass), then a
// draw from the softmax of what is left. Its uniform number is the GPU sampler's:
// Philox4x32-10 of (seed; row, step) (shaders/sample.comp), so a seed gives the same
// tokens on every run and device.
#include <cstdint>
#include <vector>

#include "vkformer/model.hpp"

namespace vkf::model {

// scores: one row of processed logits (-inf: banned); at least one finite.
uint32_t sample_scores(std::vector<double> scores, const GenerateOptions& o, uint32_t row, uint32_t step);

}  // namespace vkf::model
