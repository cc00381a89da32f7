// The Hugging Face conventions every family here shares (hugging_face.hpp): a
// save_pretrained directory's checkpoint, GenerationConfig, and BART's encoder-decoder
// layout, which Marian shares. What would change the computation and vkformer does not
// do is refused by name, never ignored.
#include "hugging_face.hpp"

#include <algorithm>
#include <filesystem>


namespace vkf::model {

Activation hf_activation(const ConfigReader& r) {
  const std::string a = r.string("activation_function");
  if (a == "swish" || a == "silu") return Activation::Silu;
  if (a == "gelu") return Activation::Gelu;
  if (a == "gelu_new" || a == "gelu_pytorch_tanh") return Activation::GeluTanh;
  if (a == "relu") return Activation::Relu;
  r.fail("field 'activation_function' is '" + a + "'; vkformer runs swish (silu), gelu, gelu_new and relu");
}

// A token id field: an integer, or a list of one (GenerationConfig allows lists of EOS ids).
uint32_t hf_token_id(const ConfigReader& r, const char* key, uint32_t vocab) {
  const nlohmann::json& v = r.need(key);
  const nlohmann::json& id = v.is_array() && v.size() == 1 ? v[0] : v;
  if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() >= int64_t(vocab))
    r.fail(std::string("field '") + key + "' must be a token id below the vocabulary size " + std::to_string(vocab) +
           (v.is_array() && v.size() > 1 ? " (vkformer takes one id, not a list)" : ""));
  return id.get<uint32_t>();
}

namespace {

// Generation settings, from generation_config.json (every key checked: a setting vkformer
// does not honour is refused) or, for older checkpoints without one, from config.json
// (only the generation keys are read there).
void read_generation(const ConfigReader& r, bool whole_file, ModelConfig& c) {
  GenerationDefaults& g = c.generation;
  const uint32_t V = c.tgt_vocab_size;
  if (r.has("num_beams")) g.num_beams = r.count("num_beams", 1, GenerateOptions::kMaxBeam);
  if (r.has("length_penalty")) g.length_penalty = r.number("length_penalty", -10, 10);
  if (r.has("early_stopping")) {
    const auto& v = r.json()["early_stopping"];
    if (v.is_boolean())
      g.early_stopping = v.get<bool>() ? 1 : 0;
    else if (v == "never")
      g.early_stopping = -1;
    else
      r.fail("field 'early_stopping' must be true, false or \"never\"");
  }
  if (r.has("max_length")) {
    g.max_length = r.count("max_length", 1, c.kind == ModelKind::DecoderOnly ? UINT32_MAX : c.max_position + 1);
    g.max_length_given = true;
  }
  if (r.has("min_length")) g.min_length = r.count("min_length", 0, c.max_position + 1);
  // Sampling, as generate() takes it from the config: do_sample with its temperature,
  // top_k and top_p (transformers' defaults 1.0, 50 and 1.0 where the file gives none).
  if (r.has("do_sample") && r.flag("do_sample")) {
    g.do_sample = true;
    if (r.has("temperature")) g.temperature = r.number("temperature", 1e-6, GenerateOptions::kMaxTemperature);
    if (r.has("top_k")) g.top_k = r.count("top_k", 0, V);
    if (r.has("top_p")) g.top_p = r.number("top_p", 1e-6, 1);
  }
  if (r.has("min_new_tokens")) g.min_new_tokens = r.count("min_new_tokens", 0, c.max_position);
  if (r.has("num_return_sequences")) g.num_return_sequences = r.count("num_return_sequences", 1, GenerateOptions::kMaxBeam);
  if (r.has("no_repeat_ngram_size")) g.no_repeat_ngram_size = r.count("no_repeat_ngram_size", 0, 1024);
  if (r.has("repetition_penalty"))
    g.repetition_penalty = r.number("repetition_penalty", 1e-6, GenerateOptions::kMaxRepetitionPenalty);
  if (r.has("bad_words_ids")) {
    const auto& v = r.json()["bad_words_ids"];
    auto bad = [&] { r.fail("field 'bad_words_ids' must be a list of non-empty lists of token ids below " + std::to_string(V)); };
    if (!v.is_array()) bad();
    for (const auto& seq : v) {
      if (!seq.is_array() || seq.empty()) bad();
      std::vector<uint32_t> ids;
      for (const auto& id : seq) {
        if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() >= int64_t(V)) bad();
        ids.push_back(id.get<uint32_t>());
      }
      g.bad_words_ids.push_back(std::move(ids));
    }
  }
  if (r.has("forced_bos_token_id")) g.forced_bos_id = hf_token_id(r, "forced_bos_token_id", V);
  if (r.has("forced_eos_token_id")) g.forced_eos_id = hf_token_id(r, "forced_eos_token_id", V);
  // (A decoder-only model may name an EOS outside its vocabulary, as a small random GPT-2
  // keeps 50256: it is then never produced, as in transformers.)
  if (c.kind == ModelKind::DecoderOnly && r.has("eos_token_id") && r.json()["eos_token_id"].is_array() &&
      r.json()["eos_token_id"].size() > 1) {
    // A list, as Llama 3 has it: its first is config.json's EOS, and every one ends an
    // output, as transformers' generate() ends it (ModelConfig::more_eos_ids).
    const auto& ends = r.json()["eos_token_id"];
    for (size_t i = 0; i < ends.size(); ++i) {
      if (!ends[i].is_number_unsigned() || ends[i].get<uint64_t>() >= V)
        r.fail("field 'eos_token_id' holds " + ends[i].dump() + ", which is not a token id of the vocabulary");
      const uint32_t id = ends[i].get<uint32_t>();
      if (i == 0 && id != c.eos_id) r.fail("field 'eos_token_id' starts with another id than config.json's");
      if (i > 0 && id != c.eos_id && std::find(c.more_eos_ids.begin(), c.more_eos_ids.end(), id) == c.more_eos_ids.end())
        c.more_eos_ids.push_back(id);
    }
  } else if (r.has("eos_token_id") && hf_token_id(r, "eos_token_id", c.kind == ModelKind::DecoderOnly ? UINT32_MAX : V) != c.eos_id) {
    r.fail("field 'eos_token_id' differs from config.json's");
  }
  if (r.has("decoder_start_token_id") && hf_token_id(r, "decoder_start_token_id", V) != c.bos_id)
    r.fail("field 'decoder_start_token_id' differs from config.json's");
  if (!whole_file) return;
  // Everything else in generation_config.json must be bookkeeping or leave generate() as
  // it is: a sampling or penalty setting vkformer would silently drop is an error.
  static const char* const kHonoured[] = {"num_beams", "length_penalty", "early_stopping", "max_length", "min_length",
                                          "min_new_tokens", "num_return_sequences", "do_sample", "temperature", "top_k",
                                          "top_p",
                                          "no_repeat_ngram_size", "bad_words_ids", "forced_bos_token_id",
                                          "forced_eos_token_id", "eos_token_id", "decoder_start_token_id",
                                          "bos_token_id", "pad_token_id", "_from_model_config", "transformers_version",
                                          "use_cache", "return_dict_in_generate", "output_scores", "repetition_penalty",
                                          "output_attentions", "output_hidden_states"};
  for (const auto& [key, value] : r.json().items()) {
    if (std::find(std::begin(kHonoured), std::end(kHonoured), key) != std::end(kHonoured)) continue;
    const bool neutral = value.is_null() || value == false || (key == "num_beam_groups" && value == 1) ||
                         (key == "diversity_penalty" && value == 0.0) || (key == "typical_p" && value == 1.0);
    if (!neutral)
      r.fail("generation setting '" + key + "' is not supported by vkformer (it honours num_beams, length_penalty, "
             "early_stopping, max_length, min_length, min_new_tokens, num_return_sequences, no_repeat_ngram_size, "
             "bad_words_ids, forced_bos_token_id, forced_eos_token_id, repetition_penalty, do_sample, temperature, "
             "top_k, top_p)",
             ErrorKind::Unsupported);
  }
}

}  // namespace

void read_hf_generation(const ModelFiles& files, ModelConfig& c) {
  if (files.has("generation_config.json"))
    read_generation(ConfigReader(files, "generation_config.json"), true, c);
  else
    read_generation(ConfigReader(files, "config.json"), false, c);
}

ModelConfig read_bart_layout_config(const ConfigReader& r) {
  ModelConfig c;
  c.architecture = r.string("model_type");
  c.hugging_face = true;
  c.d_model = r.count("d_model", 1);
  c.nhead = r.count("encoder_attention_heads", 1);
  if (r.count("decoder_attention_heads", 1) != c.nhead)
    r.fail("decoder_attention_heads differs from encoder_attention_heads; vkformer runs one head count");
  c.dim_feedforward = r.count("encoder_ffn_dim", 1);
  if (r.count("decoder_ffn_dim", 1) != c.dim_feedforward)
    r.fail("decoder_ffn_dim differs from encoder_ffn_dim; vkformer runs one feed-forward width");
  if (c.d_model % c.nhead)
    r.fail("d_model " + std::to_string(c.d_model) + " is not divisible by encoder_attention_heads " + std::to_string(c.nhead));
  c.num_encoder_layers = r.count("encoder_layers", 0);
  c.num_decoder_layers = r.count("decoder_layers", 0);
  c.activation = hf_activation(r);
  c.layer_norm_eps = 1e-5f;  // nn.LayerNorm's default, which both models use
  c.norm_first = false;
  for (const char* key : {"normalize_before", "add_final_layer_norm"})
    if (r.has(key) && r.flag(key)) r.fail(std::string("field '") + key + "' is true: that is mBART's pre-norm layout, which vkformer does not run");
  c.src_vocab_size = r.count("vocab_size", 1);
  c.tgt_vocab_size = c.src_vocab_size;  // Marian's decoder_vocab_size aside (marian.cpp)
  c.max_position = r.count("max_position_embeddings", 1, 1u << 16);
  if (uint64_t(c.max_position) * c.d_model > (1ull << 26)) r.fail("max_position_embeddings x d_model is more than 2^26");
  c.scale_embedding = r.has("scale_embedding") && r.flag("scale_embedding");
  return c;
}

void finish_bart_layout_config(const ConfigReader& r, const ModelFiles& files, ModelConfig& c) {
  c.pad_id = hf_token_id(r, "pad_token_id", c.src_vocab_size);
  c.eos_id = hf_token_id(r, "eos_token_id", c.tgt_vocab_size);
  c.bos_id = hf_token_id(r, "decoder_start_token_id", c.tgt_vocab_size);
  c.final_norms = false;
  read_hf_generation(files, c);
}

std::string hf_checkpoint(const ModelFiles& files) {
  // One file, or a sharded checkpoint (save_pretrained's default past 5 GB): its index.
  for (const char* name : {"model.safetensors", "model.safetensors.index.json"})
    if (files.has(name)) return name;
  if (files.has("pytorch_model.bin") || files.has("pytorch_model.bin.index.json"))
    throw Error("model " + files.label() + " has only pytorch_model.bin (a pickle, which vkformer does not read): convert "
                "it with transformers: the model's from_pretrained(dir), then save_pretrained(dir, "
                "safe_serialization=True), which writes model.safetensors", ErrorKind::Unsupported);
  throw Error("model " + files.label() + ": missing model.safetensors (or a sharded model.safetensors.index.json)",
              ErrorKind::NotFound);
}

void declare_bart_layout_tensors(Checkpoint& t, Model::Impl& m) {
  const ModelConfig& c = m.config;
  const uint32_t D = c.d_model, F = c.dim_feedforward, Vs = c.src_vocab_size, Vt = c.tgt_vocab_size;
  const std::string encoder = "model.encoder", decoder = "model.decoder";
  t.layers(encoder + ".layers", c.num_encoder_layers, "encoder_layers");
  t.layers(decoder + ".layers", c.num_decoder_layers, "decoder_layers");
  // The embeddings and the output projection: a tied one is absent from the file
  // (save_pretrained drops it) and is the shared embedding, or the target's.
  const std::string shared = "model.shared.weight", src = encoder + ".embed_tokens.weight",
                    tgt = decoder + ".embed_tokens.weight", head = "lm_head.weight";
  // Each in blocks where --weights asks for them (the lookups dequantize the rows they read).
  const bool own_src = t.has(src), own_tgt = t.has(tgt);
  t.embedding(m.src_embed, m.src_embed_blocks, own_src ? src : shared, Vs, D);
  if (own_tgt) t.embedding(m.tgt_embed, m.tgt_embed_blocks, tgt, Vt, D);
  else if (own_src) t.embedding(m.tgt_embed, m.tgt_embed_blocks, shared, Vs, D);
  else t.then([&m] { m.tgt_embed = m.src_embed, m.tgt_embed_blocks = m.src_embed_blocks; });
  if (own_src && own_tgt && t.has(shared)) t.unread(shared, {Vs, D});
  m.generator.out = Vt, m.generator.in = D;
  if (t.has(head)) t.linear_weight(m.generator, head, Vt, D);  // (its bias: final_logits_bias, below)
  else t.then([&m] { m.generator.weight = m.tgt_embed, m.generator.blocks = m.tgt_embed_blocks; });
  t.tensor(m.generator.bias, "final_logits_bias", {1, Vt});
  // Positions: BART's learned (offset by 2), or sinusoids computed here (older Marian
  // saves carry them too: not read).
  for (const auto& [stack, positions] : {std::pair{&encoder, &m.positions}, {&decoder, &m.tgt_positions}}) {
    const std::string table = *stack + ".embed_positions.weight";
    if (c.positions == ModelConfig::Positions::Learned)
      t.fp32_rows(*positions, table, {c.max_position + 2ull, D}, 2, c.max_position);
    else if (t.has(table))
      t.unread(table, {c.max_position, D});
  }
  if (c.positions != ModelConfig::Positions::Learned)
    t.then([&m] {
      const auto pe = sinusoidal_positions(m.config.max_position, m.config.d_model, /*halves=*/true);
      m.positions = m.ctx.buffer(pe.size() * 4, "positions");  // fp32 in every precision
      m.ctx.upload(m.positions, std::span<const float>(pe));
      m.tgt_positions = m.positions;
    });
  if (c.embedding_norm) {
    for (const auto& [stack, norm] : {std::pair{&encoder, &m.encoder_embed_norm}, {&decoder, &m.decoder_embed_norm}})
      t.norm(*norm, *stack + ".layernorm_embedding", D);
  }
  auto projections = [&](const std::string& attention, std::initializer_list<const char*> names) {
    std::vector<Checkpoint::Part> parts;
    for (const char* n : names) parts.push_back({attention + n, D});
    return parts;
  };
  // What encoder and decoder layers share: self-attention (q, k and v stacked) and its
  // norm, the feed-forward block and its norm.
  auto self_attention = [&](const std::string& p, Linear& qkv, Linear& out, Norm& norm) {
    t.stacked(qkv, projections(p + ".self_attn", {".q_proj", ".k_proj", ".v_proj"}), D, true);
    t.linear(out, p + ".self_attn.out_proj", D, D);
    t.norm(norm, p + ".self_attn_layer_norm", D);
  };
  auto feed_forward = [&](const std::string& p, FeedForward& ffn, Norm& norm) {
    t.linear(ffn.linear1, p + ".fc1", F, D);
    t.linear(ffn.linear2, p + ".fc2", D, F);
    t.norm(norm, p + ".final_layer_norm", D);
  };
  m.encoder.resize(c.num_encoder_layers);
  for (uint32_t i = 0; i < c.num_encoder_layers; ++i) {
    const std::string p = encoder + ".layers." + std::to_string(i);
    EncoderLayer& l = m.encoder[i];
    self_attention(p, l.self_qkv, l.self_out, l.norm1);
    feed_forward(p, l.ffn, l.norm2);
  }
  m.decoder.resize(c.num_decoder_layers);
  for (uint32_t i = 0; i < c.num_decoder_layers; ++i) {
    const std::string p = decoder + ".layers." + std::to_string(i);
    DecoderLayer& l = m.decoder[i];
    self_attention(p, l.self_qkv, l.self_out, l.norm1);
    t.linear(l.cross_q, p + ".encoder_attn.q_proj", D, D);
    t.stacked(l.cross_kv, projections(p + ".encoder_attn", {".k_proj", ".v_proj"}), D, true);
    t.linear(l.cross_out, p + ".encoder_attn.out_proj", D, D);
    t.norm(l.norm2, p + ".encoder_attn_layer_norm", D);
    feed_forward(p, l.ffn, l.norm3);
  }
}

}  // namespace vkf::model
