#pragma once
// The torch-seq2seq weights on the GPU, named as in the transformer they come from.
#include <vector>

#include "vkformer/model.hpp"

namespace vkf {

struct Linear {  // y = x W^T + b, W [out, in]
  Buffer weight, bias;
  uint32_t out = 0, in = 0;
};

struct Norm {
  Buffer gamma, beta;
};

struct EncoderLayer {
  Linear self_qkv, self_out, linear1, linear2;
  Norm norm1, norm2;
};

struct DecoderLayer {
  Linear self_qkv, self_out;
  Linear cross_q, cross_kv, cross_out;  // in_proj split: queries from the target, keys/values from memory
  Linear linear1, linear2;
  Norm norm1, norm2, norm3;
};

struct Model::Impl {
  Context& ctx;
  ModelConfig config;
  DType dtype;
  Buffer src_embed, tgt_embed, positions;  // positions: fp32 [max_position, d_model]
  std::vector<EncoderLayer> encoder;
  std::vector<DecoderLayer> decoder;
  Norm encoder_norm, decoder_norm;
  Linear generator;
};

}  // namespace vkf
