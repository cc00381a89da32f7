// The Hugging Face conventions every family here shares (hugging_face.hpp): a
// save_pretrained directory's checkpoint, GenerationConfig, and BART's encoder-decoder
// layout, which Marian shares. What would change the computation and vkformer does not
// do is refused by name, never ignored.
#include "hugging_face.hpp"

#include <algorithm>
#include <filesystem>

#include "expected_tensors.hpp"
#include "uploader.hpp"

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
    g.max_length = r.count("max_length", 1, c.decoder_only ? UINT32_MAX : c.max_position + 1);
    g.max_length_given = true;
  }
  if (r.has("min_length")) g.min_length = r.count("min_length", 0, c.max_position + 1);
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
  if (r.has("eos_token_id") && hf_token_id(r, "eos_token_id", c.decoder_only ? UINT32_MAX : V) != c.eos_id)
    r.fail("field 'eos_token_id' differs from config.json's");
  if (r.has("decoder_start_token_id") && hf_token_id(r, "decoder_start_token_id", V) != c.bos_id)
    r.fail("field 'decoder_start_token_id' differs from config.json's");
  if (c.decoder_only) {
    // A decoder-only model's generation runs greedy or sampled steps with the repetition
    // penalty, and takes max_length as transformers does (prompt included): a processor
    // or beam setting it would not apply is refused by name, never dropped.
    auto unrun = [&](const char* key, bool set, const char* what) {
      if (set)
        r.fail("field '" + std::string(key) + "' asks for " + what + ", which vkformer does not run for decoder-only "
               "models yet (greedy decoding and sampling, with the repetition penalty, it does)", ErrorKind::Unsupported);
    };
    unrun("num_beams", g.num_beams > 1, "beam search");
    unrun("no_repeat_ngram_size", g.no_repeat_ngram_size > 0, "a no-repeat n-gram processor");
    unrun("bad_words_ids", !g.bad_words_ids.empty(), "banned token sequences");
    unrun("min_length", g.min_length > 0, "a minimum length");
    unrun("forced_bos_token_id", bool(g.forced_bos_id), "a forced first token");
    unrun("forced_eos_token_id", bool(g.forced_eos_id), "a forced last token");
  }
  if (!whole_file) return;
  // Everything else in generation_config.json must be bookkeeping or leave generate() as
  // it is: a sampling or penalty setting vkformer would silently drop is an error.
  static const char* const kHonoured[] = {"num_beams", "length_penalty", "early_stopping", "max_length", "min_length",
                                          "no_repeat_ngram_size", "bad_words_ids", "forced_bos_token_id",
                                          "forced_eos_token_id", "eos_token_id", "decoder_start_token_id",
                                          "bos_token_id", "pad_token_id", "_from_model_config", "transformers_version",
                                          "use_cache", "return_dict_in_generate", "output_scores", "repetition_penalty",
                                          "output_attentions", "output_hidden_states"};
  for (const auto& [key, value] : r.json().items()) {
    if (std::find(std::begin(kHonoured), std::end(kHonoured), key) != std::end(kHonoured)) continue;
    const bool neutral = value.is_null() || value == false || (key == "num_return_sequences" && value == 1) ||
                         (key == "num_beam_groups" && value == 1) ||
                         (key == "diversity_penalty" && value == 0.0) ||
                         // sampling settings are inert while do_sample is false
                         ((key == "temperature" || key == "top_k" || key == "top_p") && !(r.json().contains("do_sample") && r.json()["do_sample"] == true));
    if (!neutral)
      r.fail("generation setting '" + key + "' is not supported by vkformer (it honours num_beams, length_penalty, "
             "early_stopping, max_length, min_length, no_repeat_ngram_size, bad_words_ids, forced_bos_token_id, "
             "forced_eos_token_id)");
  }
}

void hf_attention(ExpectedTensors& t, const std::string& p, uint64_t d) {
  for (const char* n : {".q_proj", ".k_proj", ".v_proj", ".out_proj"}) t.linear(p + n, d, d);
}

// The names of the embeddings and the output projection: tied ones are absent from the
// file (save_pretrained drops them) and fall back to model.shared.weight.
struct Embeddings {
  std::string src, tgt, generator;
};

Embeddings embeddings(const SafeTensors& f) {
  auto has = [&](const std::string& n) { return f.tensors().count(n) > 0; };
  Embeddings e;
  e.src = has("model.encoder.embed_tokens.weight") ? "model.encoder.embed_tokens.weight" : "model.shared.weight";
  e.tgt = has("model.decoder.embed_tokens.weight") ? "model.decoder.embed_tokens.weight" : "model.shared.weight";
  e.generator = has("lm_head.weight") ? "lm_head.weight" : e.tgt;
  return e;
}

ExpectedTensors expected_tensors(const ModelConfig& c, const SafeTensors& f, const Embeddings& e) {
  const uint64_t D = c.d_model, F = c.dim_feedforward;
  auto has = [&](const std::string& n) { return f.tensors().count(n) > 0; };
  ExpectedTensors t;
  if (e.src == "model.shared.weight" || e.tgt == "model.shared.weight" || has("model.shared.weight"))
    t.add("model.shared.weight", {c.src_vocab_size, D});
  if (e.src != "model.shared.weight") t.add(e.src, {c.src_vocab_size, D});
  if (e.tgt != "model.shared.weight") t.add(e.tgt, {c.tgt_vocab_size, D});
  if (e.generator == "lm_head.weight") t.add("lm_head.weight", {c.tgt_vocab_size, D});
  t.add("final_logits_bias", {1, c.tgt_vocab_size});
  for (const char* stack : {"model.encoder", "model.decoder"}) {
    const std::string s = stack;
    if (c.positions == ModelConfig::Positions::Learned) {
      t.add(s + ".embed_positions.weight", {c.max_position + 2ull, D});  // BART's offset of 2
    } else if (has(s + ".embed_positions.weight")) {
      t.add(s + ".embed_positions.weight", {c.max_position, D});  // older Marian saves: recomputed, not read
    }
    if (c.embedding_norm) t.norm(s + ".layernorm_embedding", D);
  }
  for (uint32_t i = 0; i < c.num_encoder_layers; ++i) {
    const std::string p = "model.encoder.layers." + std::to_string(i);
    hf_attention(t, p + ".self_attn", D);
    t.norm(p + ".self_attn_layer_norm", D);
    t.linear(p + ".fc1", F, D);
    t.linear(p + ".fc2", D, F);
    t.norm(p + ".final_layer_norm", D);
  }
  for (uint32_t i = 0; i < c.num_decoder_layers; ++i) {
    const std::string p = "model.decoder.layers." + std::to_string(i);
    hf_attention(t, p + ".self_attn", D);
    t.norm(p + ".self_attn_layer_norm", D);
    hf_attention(t, p + ".encoder_attn", D);
    t.norm(p + ".encoder_attn_layer_norm", D);
    t.linear(p + ".fc1", F, D);
    t.linear(p + ".fc2", D, F);
    t.norm(p + ".final_layer_norm", D);
  }
  return t;
}

std::vector<std::string> with_suffixes(const std::string& p, std::initializer_list<const char*> suffixes) {
  std::vector<std::string> out;
  for (const char* s : suffixes) out.push_back(p + s);
  return out;
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
  if (c.head_dim() > Ops::kMaxFusedHeadDim)
    r.fail("head_dim " + std::to_string(c.head_dim()) + " is larger than the " + std::to_string(Ops::kMaxFusedHeadDim) +
           " vkformer's attention kernel supports");
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

std::unique_ptr<Model::Impl> load_bart_layout_weights(Context& ctx, const ModelFiles& files, const ModelConfig& c,
                                             DType precision) {
  SafeTensors file(files, hf_checkpoint(files));
  const Embeddings e = embeddings(file);
  check_layer_count(file, files.label(), "model.encoder.layers", c.num_encoder_layers, "encoder_layers");
  check_layer_count(file, files.label(), "model.decoder.layers", c.num_decoder_layers, "decoder_layers");
  expected_tensors(c, file, e).check(file, files.label(), c.architecture);

  auto m = std::make_unique<Model::Impl>(Model::Impl{.ctx = ctx, .config = c, .dtype = precision});
  Uploader up(ctx, file, precision);
  const uint32_t D = c.d_model;
  m->src_embed = up.tensor(e.src);
  m->tgt_embed = e.tgt == e.src ? m->src_embed : up.tensor(e.tgt);
  m->generator = {.weight = e.generator == e.tgt ? m->tgt_embed : up.tensor(e.generator),
                  .bias = up.tensor("final_logits_bias"), .out = c.tgt_vocab_size, .in = D};
  if (c.positions == ModelConfig::Positions::Learned) {
    m->positions = up.fp32_rows("model.encoder.embed_positions.weight", 2, c.max_position);
    m->tgt_positions = up.fp32_rows("model.decoder.embed_positions.weight", 2, c.max_position);
  } else {
    const auto pe = sinusoidal_positions(c.max_position, D, /*halves=*/true);
    m->positions = ctx.buffer(pe.size() * 4, "positions");  // fp32 in every precision
    ctx.upload(m->positions, std::span<const float>(pe));
    m->tgt_positions = m->positions;
  }
  if (c.embedding_norm) {
    m->encoder_embed_norm = up.norm("model.encoder.layernorm_embedding");
    m->decoder_embed_norm = up.norm("model.decoder.layernorm_embedding");
  }
  for (uint32_t i = 0; i < c.num_encoder_layers; ++i) {
    const std::string p = "model.encoder.layers." + std::to_string(i);
    m->encoder.push_back({.self_qkv = up.stacked_linear(with_suffixes(p + ".self_attn", {".q_proj", ".k_proj", ".v_proj"})),
                          .self_out = up.linear(p + ".self_attn.out_proj"),
                          .ffn = {up.linear(p + ".fc1"), up.linear(p + ".fc2")},
                          .norm1 = up.norm(p + ".self_attn_layer_norm"),
                          .norm2 = up.norm(p + ".final_layer_norm")});
  }
  for (uint32_t i = 0; i < c.num_decoder_layers; ++i) {
    const std::string p = "model.decoder.layers." + std::to_string(i);
    m->decoder.push_back({.self_qkv = up.stacked_linear(with_suffixes(p + ".self_attn", {".q_proj", ".k_proj", ".v_proj"})),
                          .self_out = up.linear(p + ".self_attn.out_proj"),
                          .cross_q = up.linear(p + ".encoder_attn.q_proj"),
                          .cross_kv = up.stacked_linear(with_suffixes(p + ".encoder_attn", {".k_proj", ".v_proj"})),
                          .cross_out = up.linear(p + ".encoder_attn.out_proj"),
                          .ffn = {up.linear(p + ".fc1"), up.linear(p + ".fc2")},
                          .norm1 = up.norm(p + ".self_attn_layer_norm"),
                          .norm2 = up.norm(p + ".encoder_attn_layer_norm"),
                          .norm3 = up.norm(p + ".final_layer_norm")});
  }
  return m;
}

}  // namespace vkf::model
