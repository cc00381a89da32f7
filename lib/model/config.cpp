#include "config_reader.hpp"
#include "vkformer/model.hpp"

namespace vkf {

ModelConfig ModelConfig::from_file(const std::string& path) {
  const model::ConfigReader r(path);
  ModelConfig c;
  c.architecture = r.string("architecture");
  if (c.architecture != "torch-seq2seq")
    r.fail("unknown architecture '" + c.architecture + "' (this vkformer knows: torch-seq2seq)");
  model::set_stack(c, r.stack());
  c.num_encoder_layers = r.count("num_encoder_layers", 0);
  c.num_decoder_layers = r.count("num_decoder_layers", 0);
  c.src_vocab_size = r.count("src_vocab_size", 1);
  c.tgt_vocab_size = r.count("tgt_vocab_size", 1);
  c.max_position = r.count("max_position", 1);
  c.scale_embedding = r.flag("scale_embedding");
  c.pad_id = r.count("pad_id", 0);
  c.bos_id = r.count("bos_id", 0);
  c.eos_id = r.count("eos_id", 0);
  if (c.pad_id >= c.src_vocab_size) r.fail("pad_id is outside the source vocabulary");
  if (c.bos_id >= c.tgt_vocab_size || c.eos_id >= c.tgt_vocab_size) r.fail("bos_id or eos_id is outside the target vocabulary");
  return c;
}

}  // namespace vkf
