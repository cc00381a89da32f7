#pragma once
// Transformer weights on the GPU, named as in the PyTorch modules they come from.
#include "vkformer/ops.hpp"

namespace vkf::model {

struct Linear {  // y = x W^T + b, W [out, in]
  Buffer weight, bias;
  uint32_t out = 0, in = 0;
  std::optional<BlockType> blocks;  // W in llama.cpp's blocks (upload_blocks), else the model's precision
  // A stacked weight whose last parts llama.cpp's mix stores in other blocks than the
  // first (v after q and k in its "more bits" layers): W's last `rows` rows apart, in
  // their own blocks; `weight` holds the first out - rows (Checkpoint::stacked).
  struct Apart {
    Buffer weight;
    uint32_t rows = 0;
    std::optional<BlockType> blocks;
  } apart;
};

struct Norm {  // LayerNorm's gamma and beta, [d_model] each
  Buffer gamma, beta;
};

struct FeedForward {  // linear2(act(linear1(x)))
  Linear linear1, linear2;
};

// nn.TransformerEncoderLayer: self-attention's in_proj is one [3D, D] projection (q, k, v).
struct EncoderLayer {
  Linear self_qkv, self_out;
  FeedForward ffn;
  Norm norm1, norm2;
};

// nn.TransformerDecoderLayer. Self-attention's in_proj stays one [3D, D] projection
// (its queries go to scratch, its keys and values straight into the KV cache, in one
// split-output GEMM); cross-attention's is split by where the inputs come from: queries
// from the target (cross_q) and keys/values from the encoder's memory (cross_kv, [2D, D],
// computed once per source).
// A decoder-only model's layers (GPT-2) have no cross-attention: cross_* and norm2 are
// empty, norm1 comes before self-attention and norm3 before the feed-forward block.
struct DecoderLayer {
  Linear self_qkv, self_out;
  Linear cross_q, cross_kv, cross_out;
  FeedForward ffn;
  Norm norm1, norm2, norm3;
  bool has_cross_attention() const { return cross_out.out != 0; }
};

}  // namespace vkf::model
