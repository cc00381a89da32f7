#pragma once
// A loaded torch-seq2seq model: its config and its weights on the GPU.
#include <vector>

#include "vkformer/model.hpp"
#include "weights.hpp"

namespace vkf {

struct Model::Impl {
  Context& ctx;
  ModelConfig config;
  DType dtype;
  Buffer src_embed, tgt_embed;          // [src_vocab, D], [tgt_vocab, D]
  Buffer positions;                     // fp32 [max_position, D], sinusoidal
  std::vector<model::EncoderLayer> encoder;
  std::vector<model::DecoderLayer> decoder;
  model::Norm encoder_norm, decoder_norm;
  model::Linear generator;              // [tgt_vocab, D]
};

}  // namespace vkf
