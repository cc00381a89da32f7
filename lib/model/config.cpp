#include "config_reader.hpp"
#include "vkformer/model.hpp"

namespace vkf {

ModelConfig ModelConfig::from_file(const std::string& path) {
  const model::ConfigReader r(path);
  ModelConfig c;
  c.architecture = r.string("architecture");
  if (c.architecture != "torch-seq2seq")
    r.fail("unknown architecture '" + c.architecture + "' (this vkformer knows: torch-seq2seq)");
  c.d_model = r.count("d_model", 1);
  c.nhead = r.count("nhead", 1);
  c.num_encoder_layers = r.count("num_encoder_layers", 0);
  c.num_decoder_layers = r.count("num_decoder_layers", 0);
  c.dim_feedforward = r.count("dim_feedforward", 1);
  c.activation = r.activation("activation");
  c.norm_first = r.flag("norm_first");
  c.layer_norm_eps = r.number("layer_norm_eps", 0, 1);
  c.src_vocab_size = r.count("src_vocab_size", 1);
  c.tgt_vocab_size = r.count("tgt_vocab_size", 1);
  c.max_position = r.count("max_position", 1);
  c.scale_embedding = r.flag("scale_embedding");
  c.pad_id = r.count("pad_id", 0);
  c.bos_id = r.count("bos_id", 0);
  c.eos_id = r.count("eos_id", 0);
  if (c.d_model % c.nhead)
    r.fail("d_model " + std::to_string(c.d_model) + " is not divisible by nhead " + std::to_string(c.nhead));
  if (c.head_dim() > Ops::kMaxFusedHeadDim)
    r.fail("head_dim " + std::to_string(c.head_dim()) + " (d_model / nhead) is larger than the " +
           std::to_string(Ops::kMaxFusedHeadDim) + " vkformer's attention kernel supports");
  if (c.pad_id >= c.src_vocab_size) r.fail("pad_id is outside the source vocabulary");
  if (c.bos_id >= c.tgt_vocab_size || c.eos_id >= c.tgt_vocab_size) r.fail("bos_id or eos_id is outside the target vocabulary");
  return c;
}

}  // namespace vkf
