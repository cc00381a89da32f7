#pragma once
// A loaded model, whatever its family: its config and its weights on the GPU, as the
// graph reads them: an encoder stack (encoder-decoders), a decoder stack with or without
// cross-attention, their embeddings, positions and norms, the output projection. Tied
// weights (a shared embedding, the output projection) are one buffer under several names.
#include <vector>

#include "vkformer/model.hpp"
#include "weights.hpp"

namespace vkf {

struct Model::Impl {
  Context& ctx;
  ModelConfig config;
  DType dtype;
  Buffer src_embed, tgt_embed;          // [src_vocab, D], [tgt_vocab, D]
  std::optional<BlockType> src_embed_blocks, tgt_embed_blocks;  // tables in llama.cpp's blocks, else the precision
  Buffer positions, tgt_positions;      // fp32 [max_position, D] each: the encoder's, the decoder's
  model::Norm encoder_embed_norm, decoder_embed_norm;  // config.embedding_norm only
  std::vector<model::EncoderLayer> encoder;
  std::vector<model::DecoderLayer> decoder;
  model::Norm encoder_norm, decoder_norm;  // config.final_norms only
  model::Linear generator;              // [tgt_vocab, D]
  Buffer token_types;                   // fp32 [config.token_types, D]: BERT's token_type_embeddings
  model::Linear pooler;                 // [D, D], tanh, on each sequence's first token (BERT's); out 0: none
  // BERT's heads, where the checkpoint has one (out 0: none): the masked-LM head's
  // transform [D, D] (then the activation and its LayerNorm) and decoder [V, D] (tied to
  // the word embeddings) with its bias [V]; a classifier [labels, D] on the pooled output,
  // or (RoBERTa's, DistilBERT's: no pooler) on classifier_dense's of the first token,
  // with its own activation (tanh; DistilBERT's pre_classifier: ReLU).
  model::Linear mlm_transform, mlm_decoder, classifier, classifier_dense;
  Activation classifier_activation = Activation::Tanh;
  model::Norm mlm_norm;
  Buffer mlm_bias;
  Buffer rope_table;                    // Positions::Rotary: fp32 [max_position, head_dim / 2, 2] (rotary_positions)
  // The largest weight in blocks, rows x K values: the scratch a product of more rows than
  // a decode step's dequantizes it into (GemmOperands::scratch). 0: no weight in blocks.
  uint64_t dequantized_values = 0;
};

}  // namespace vkf
