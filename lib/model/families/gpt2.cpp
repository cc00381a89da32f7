// GPT-2, as transformers' GPT2LMHeadModel computes it (modeling_gpt2.py), mapped onto
// vkformer's decoder stack: learned positions, pre-norm blocks (ln_1, causal
// self-attention, ln_2, an MLP with gelu_new), the final ln_f, and the output
// projection tied to the token embedding. Conv1D layers store their weights [in, out]:
// they are transposed once at load into Linear's [out, in]; c_attn's fused q, k, v
// projection is already the one [3D, D] projection vkformer's self-attention takes.
#include <filesystem>

#include "bart_tokenizer.hpp"
#include "family.hpp"
#include "hugging_face.hpp"
#include "vkformer/tensor_io.hpp"

namespace vkf::model {

namespace {

// config.json (model_type "gpt2"): errors name the file and the field; settings that
// would change the computation and vkformer does not run are refused by name.
ModelConfig read_gpt2_config(const ModelFiles& files) {
  namespace fs = std::filesystem;
  const ConfigReader r(files, "config.json");
  ModelConfig c;
  c.architecture = r.string("model_type");
  if (c.architecture != "gpt2") r.fail("model_type '" + c.architecture + "' is not gpt2");
  c.hugging_face = true;
  c.kind = ModelKind::DecoderOnly;
  c.d_model = r.count("n_embd", 1);
  c.nhead = r.count("n_head", 1);
  if (c.d_model % c.nhead)
    r.fail("n_embd " + std::to_string(c.d_model) + " is not divisible by n_head " + std::to_string(c.nhead));
  c.dim_feedforward = r.has("n_inner") ? r.count("n_inner", 1) : 4 * c.d_model;  // null: 4 x n_embd
  c.num_encoder_layers = 0;
  c.num_decoder_layers = r.count("n_layer", 0);
  const std::string act = r.has("activation_function") ? r.string("activation_function") : "gelu_new";
  if (act == "gelu_new" || act == "gelu_pytorch_tanh") c.activation = Activation::GeluTanh;
  else if (act == "gelu") c.activation = Activation::Gelu;
  else if (act == "relu") c.activation = Activation::Relu;
  else if (act == "silu" || act == "swish") c.activation = Activation::Silu;
  else r.fail("field 'activation_function' is '" + act + "'; vkformer runs gelu_new, gelu_pytorch_tanh, gelu, relu and silu");
  c.layer_norm_eps = r.has("layer_norm_epsilon") ? r.number("layer_norm_epsilon", 0, 1) : 1e-5f;
  c.norm_first = true;
  c.tgt_vocab_size = r.count("vocab_size", 1);
  c.src_vocab_size = c.tgt_vocab_size;
  c.max_position = r.count("n_positions", 1, 1u << 16);
  if (uint64_t(c.max_position) * c.d_model > (1ull << 26)) r.fail("n_positions x n_embd is more than 2^26");
  // What would change the computation, refused by name rather than ignored.
  if (r.has("scale_attn_weights") && !r.flag("scale_attn_weights"))
    r.fail("field 'scale_attn_weights' is false (attention without 1/sqrt(head_dim)), which vkformer does not run");
  if (r.has("scale_attn_by_inverse_layer_idx") && r.flag("scale_attn_by_inverse_layer_idx"))
    r.fail("field 'scale_attn_by_inverse_layer_idx' is true, which vkformer does not run");
  if (r.has("add_cross_attention") && r.flag("add_cross_attention"))
    r.fail("field 'add_cross_attention' is true: a GPT-2 with cross-attention is an encoder-decoder's decoder, which vkformer does not run");
  // Token ids: GPT-2's <|endoftext|> (50256) is BOS and EOS; a random model with a smaller
  // vocabulary keeps the default and then never produces it, as transformers does.
  auto id = [&](const char* key, uint32_t fallback) -> uint32_t {
    if (!r.has(key)) return fallback;
    const auto& v = r.json()[key];
    const auto& one = v.is_array() && v.size() == 1 ? v[0] : v;
    if (!one.is_number_integer() || one.get<int64_t>() < 0 || one.get<int64_t>() > int64_t(UINT32_MAX))
      r.fail(std::string("field '") + key + "' must be one token id");
    return one.get<uint32_t>();
  };
  c.bos_id = id("bos_token_id", 50256);
  c.eos_id = id("eos_token_id", 50256);
  c.pad_id = c.eos_id;
  c.positions = ModelConfig::Positions::Learned;
  c.final_norms = true;  // ln_f
  // generation_config.json as for the encoder-decoders: repetition_penalty honoured, a
  // setting vkformer would drop (do_sample, ...) refused by name. Its max_length counts
  // the prompt, so the default number of new tokens stays vkformer's.
  read_hf_generation(files, c);
  return c;
}

// Tensor names with or without the "transformer." prefix (GPT2LMHeadModel writes it,
// GPT2Model does not).
struct Names {
  std::string prefix;
  std::string operator()(const std::string& n) const { return prefix + n; }
};

std::string checkpoint(const ModelFiles& files) { return hf_checkpoint(files); }

void declare_tensors(Checkpoint& t, Model::Impl& m) {
  const ModelConfig& c = m.config;
  const std::string embedding = "wte.weight";
  const Names n{t.has("transformer." + embedding) ? "transformer." : ""};
  const uint32_t D = c.d_model, F = c.dim_feedforward, V = c.tgt_vocab_size;
  const std::string blocks = n("h");
  t.layers(blocks, c.num_decoder_layers, "n_layer");
  t.embedding(m.tgt_embed, m.tgt_embed_blocks, n(embedding), V, D);
  t.fp32_rows(m.tgt_positions, n("wpe.weight"), {c.max_position, D}, 0, c.max_position);
  m.decoder.resize(c.num_decoder_layers);
  for (uint32_t i = 0; i < c.num_decoder_layers; ++i) {
    const std::string p = blocks + "." + std::to_string(i);
    DecoderLayer& l = m.decoder[i];  // no cross-attention: cross_q, cross_kv and cross_out stay empty
    t.norm(l.norm1, p + ".ln_1", D);  // before self-attention
    t.conv1d(l.self_qkv, p + ".attn.c_attn", D, 3 * D);
    t.conv1d(l.self_out, p + ".attn.c_proj", D, D);
    t.norm(l.norm3, p + ".ln_2", D);  // before the MLP (norm2 belongs to cross-attention)
    t.conv1d(l.ffn.linear1, p + ".mlp.c_fc", D, F);
    t.conv1d(l.ffn.linear2, p + ".mlp.c_proj", F, D);
    // The attention-mask buffers older files carry: not read.
    for (const char* buffer : {".attn.bias", ".attn.masked_bias"}) t.unread(p + buffer);
  }
  t.norm(m.decoder_norm, n("ln_f"), D);
  // lm_head.weight is the tied embedding unless config.json unties it (a file may carry
  // the tied copy too).
  const ConfigReader r(t.files(), "config.json");
  const bool tied = !r.has("tie_word_embeddings") || r.flag("tie_word_embeddings");
  const std::string head = "lm_head.weight";
  if (!tied) {
    t.linear_weight(m.generator, head, V, D);
  } else {
    if (t.has(head)) t.unread(head, {V, D});
    t.tied_head(m.generator, m.tgt_embed, m.tgt_embed_blocks, V, D);
  }
  t.then([&m] {
    m.src_embed = m.tgt_embed;
    m.src_embed_blocks = m.tgt_embed_blocks;
    m.positions = m.tgt_positions;
  });
}

std::unique_ptr<Tokenizer> make_tokenizer(const ModelFiles& files, const ConfigReader& config) {
  // tokenizer.json alone (a GGUF file's, or a directory without vocab.json): byte-level
  // BPE as the fast tokenizer reads it.
  if (files.gguf() || (!files.has("vocab.json") && files.has("tokenizer.json")))
    return BartTokenizer::from_tokenizer_json(files, config.count("vocab_size", 1));
  return std::make_unique<BartTokenizer>(files, config.count("vocab_size", 1), BartTokenizer::Flavour::Gpt2);
}

}  // namespace

const Family kGpt2{"gpt2", true, ModelTask::Generator, read_gpt2_config, checkpoint, declare_tensors, make_tokenizer,
                 {"vocab.json", "merges.txt", "tokenizer.json"}};  // (tokenizer.json: a GGUF file's)

}  // namespace vkf::model
