#include "gguf_hugging_face.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <tuple>
#include <nlohmann/json.hpp>

#include "vkformer/error.hpp"

namespace vkf::model {

namespace {

bool known_architecture(const std::string& a) { return a == "llama" || a == "qwen2" || a == "gpt2"; }

std::string architecture(const Gguf& g) {
  const auto a = g.string_value("general.architecture");
  if (!a) throw Error(g.label() + ": no general.architecture: not a model file vkformer can run");
  if (!known_architecture(*a))
    throw Error(g.label() + ": architecture '" + *a + "' is not one vkformer runs from a GGUF file (llama, qwen2, gpt2)",
                ErrorKind::Unsupported);
  return *a;
}

uint64_t required(const Gguf& g, const std::string& key) {
  const auto v = g.uint_value(key);
  if (!v) throw Error(g.label() + ": missing " + key);
  return *v;
}

// The vocabulary's size: the embedding's rows (the model's own), else the stated size or
// the tokenizer's token list (a file with no weights).
uint64_t vocabulary(const Gguf& g, const std::string& arch) {
  const auto it = g.tensors().find("token_embd.weight");
  if (it != g.tensors().end() && it->second.shape.size() == 2) return it->second.shape[1];
  if (const auto v = g.uint_value(arch + ".vocab_size")) return *v;
  if (const GgufValue* tokens = g.array_value("tokenizer.ggml.tokens", GgufValueType::String)) return tokens->count;
  throw Error(g.label() + ": no token_embd.weight [dim, vocab], vocab_size or token list: the vocabulary's size is unknown");
}

// Protocol-buffer wire format, enough for SentencePiece's model proto.
void varint(std::string& out, uint64_t v) {
  for (; v >= 0x80; v >>= 7) out.push_back(char(0x80 | (v & 0x7f)));
  out.push_back(char(v));
}
void field_varint(std::string& out, uint32_t field, uint64_t v) {
  varint(out, uint64_t(field) << 3);
  varint(out, v);
}
void field_bytes(std::string& out, uint32_t field, std::string_view bytes) {
  varint(out, uint64_t(field) << 3 | 2);
  varint(out, bytes.size());
  out += bytes;
}
void field_float(std::string& out, uint32_t field, float f) {
  varint(out, uint64_t(field) << 3 | 5);
  char b[4];
  std::memcpy(b, &f, 4);
  out.append(b, 4);
}

// The SentencePiece tokenizer's arrays, checked: the same length, types 1-6.
struct SpmArrays {
  const GgufValue* tokens = nullptr;
  const GgufValue* scores = nullptr;
  const GgufValue* types = nullptr;
};
SpmArrays spm_arrays(const Gguf& g) {
  SpmArrays a;
  a.tokens = g.array_value("tokenizer.ggml.tokens", GgufValueType::String);
  if (!a.tokens) throw Error(g.label() + ": tokenizer.ggml.tokens is missing");
  a.scores = g.array_value("tokenizer.ggml.scores", GgufValueType::F32);
  a.types = g.array_value("tokenizer.ggml.token_type", GgufValueType::I32);
  for (const auto& [what, v] : {std::pair{"scores", a.scores}, {"token_type", a.types}})
    if (v && v->count != a.tokens->count)
      throw Error(g.label() + ": tokenizer.ggml." + what + " has " + std::to_string(v->count) + " entries, tokens " +
                  std::to_string(a.tokens->count));
  return a;
}

std::string spm_model_proto(const Gguf& g) {
  const SpmArrays a = spm_arrays(g);
  std::string proto;
  bool bytes = false;
  for (uint64_t i = 0; i < a.tokens->count; ++i) {
    std::string piece;
    field_bytes(piece, 1, a.tokens->strings[i]);
    field_float(piece, 2, a.scores ? float(a.scores->item(i).f) : 0.0f);
    const int64_t type = a.types ? a.types->item(i).i : 1;
    if (type < 1 || type > 6)
      throw Error(g.label() + ": tokenizer.ggml.token_type of token " + std::to_string(i) + " is " +
                  std::to_string(type) + ", not one of SentencePiece's piece types (1 to 6)");
    bytes = bytes || type == 6;
    field_varint(piece, 3, uint64_t(type));
    field_bytes(proto, 1, piece);
  }
  std::string trainer;
  field_varint(trainer, 3, 2);  // model_type BPE
  if (bytes) field_varint(trainer, 35, 1);  // byte_fallback
  auto id = [&](const char* key, uint32_t field, int64_t fallback) {
    const auto v = g.uint_value(key);
    const int64_t i = v ? int64_t(*v) : fallback;
    if (i >= int64_t(a.tokens->count)) throw Error(g.label() + ": " + key + " " + std::to_string(i) + " is not a token");
    field_varint(trainer, field, uint64_t(i));  // (a negative id as protobuf's 64-bit two's complement)
  };
  id("tokenizer.ggml.unknown_token_id", 40, 0);
  id("tokenizer.ggml.bos_token_id", 41, 1);
  id("tokenizer.ggml.eos_token_id", 42, 2);
  id("tokenizer.ggml.padding_token_id", 43, -1);
  field_bytes(proto, 2, trainer);
  std::string normalizer;
  field_bytes(normalizer, 1, "identity");
  field_varint(normalizer, 3, g.bool_value("tokenizer.ggml.add_space_prefix").value_or(true));
  field_varint(normalizer, 4, 0);  // remove_extra_whitespaces: llama.cpp keeps them
  field_varint(normalizer, 5, 1);  // escape_whitespaces
  field_bytes(proto, 3, normalizer);
  return proto;
}

std::string spm_tokenizer_config(const Gguf& g) {
  const SpmArrays a = spm_arrays(g);
  nlohmann::ordered_json c;
  c["add_bos_token"] = g.bool_value("tokenizer.ggml.add_bos_token").value_or(true);
  c["add_eos_token"] = g.bool_value("tokenizer.ggml.add_eos_token").value_or(false);
  c["legacy"] = true;
  for (const auto& [key, field, fallback] : {std::tuple{"tokenizer.ggml.bos_token_id", "bos_token", 1},
                                             {"tokenizer.ggml.eos_token_id", "eos_token", 2},
                                             {"tokenizer.ggml.unknown_token_id", "unk_token", 0}}) {
    const uint64_t i = g.uint_value(key).value_or(uint64_t(fallback));
    if (i < a.tokens->count) c[field] = std::string(a.tokens->strings[i]);
  }
  if (const auto pad = g.uint_value("tokenizer.ggml.padding_token_id"); pad && *pad < a.tokens->count)
    c["pad_token"] = std::string(a.tokens->strings[*pad]);
  return c.dump(1);
}

// The split patterns of llama.cpp's pre-tokenizer names, as the Hugging Face tokenizers
// they stand for have them (tokenizer.json's Split before a regex-less ByteLevel).
const char* kLlama3Split =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
    "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const char* kQwen2Split =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
    "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

// A `gpt2` tokenizer (byte-level BPE: tokens, merges, token_type, tokenizer.ggml.pre) as
// the tokenizer.json transformers' fast tokenizer would read.
std::string bpe_tokenizer_json(const Gguf& g) {
  const std::string pre = g.string_value("tokenizer.ggml.pre").value_or("default");
  nlohmann::ordered_json pre_tokenizer, normalizer;  // (null: none)
  auto split = [](const char* regex) {
    return nlohmann::ordered_json{
        {"type", "Sequence"},
        {"pretokenizers",
         {{{"type", "Split"}, {"pattern", {{"Regex", std::string(regex)}}},
           {"behavior", "Isolated"}, {"invert", false}},
          {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", false}}}}};
  };
  if (pre == "default" || pre == "gpt-2") {
    pre_tokenizer = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", true}};
  } else if (pre == "llama-bpe" || pre == "llama3") {
    pre_tokenizer = split(kLlama3Split);
  } else if (pre == "qwen2") {
    pre_tokenizer = split(kQwen2Split);
    normalizer = {{"type", "NFC"}};
  } else if (pre == "smollm") {  // each digit apart, then GPT-2's regex
    pre_tokenizer = {{"type", "Sequence"},
                     {"pretokenizers",
                      {{{"type", "Digits"}, {"individual_digits", true}},
                       {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", true}}}}};
  } else {
    throw Error(g.label() + ": tokenizer.ggml.pre '" + pre +
                    "' is not a pre-tokenizer vkformer reads yet (default, gpt-2, llama-bpe, qwen2, smollm)",
                ErrorKind::Unsupported);
  }
  const GgufValue* tokens = g.array_value("tokenizer.ggml.tokens", GgufValueType::String);
  const GgufValue* merges = g.array_value("tokenizer.ggml.merges", GgufValueType::String);
  const GgufValue* types = g.array_value("tokenizer.ggml.token_type", GgufValueType::I32);
  if (!tokens || !merges) throw Error(g.label() + ": a gpt2 tokenizer needs tokenizer.ggml.tokens and merges");
  if (types && types->count != tokens->count)
    throw Error(g.label() + ": tokenizer.ggml.token_type has " + std::to_string(types->count) + " entries, tokens " +
                std::to_string(tokens->count));
  nlohmann::ordered_json vocab = nlohmann::ordered_json::object(), added = nlohmann::ordered_json::array();
  for (uint64_t i = 0; i < tokens->count; ++i) {
    const std::string token(tokens->strings[i]);
    const int64_t type = types ? types->item(i).i : 1;
    if (type == 3 || type == 4)  // control and user-defined: matched in the text first
      added.push_back({{"id", i}, {"content", token}, {"single_word", false}, {"lstrip", false}, {"rstrip", false},
                       {"normalized", false}, {"special", type == 3}});
    if (!vocab.contains(token)) vocab[token] = i;
  }
  nlohmann::ordered_json merge_list = nlohmann::ordered_json::array();
  for (std::string_view m : merges->strings) merge_list.push_back(std::string(m));
  nlohmann::ordered_json j;
  j["version"] = "1.0";
  j["added_tokens"] = added;
  j["normalizer"] = normalizer;
  j["pre_tokenizer"] = pre_tokenizer;
  j["post_processor"] = nullptr;
  if (g.bool_value("tokenizer.ggml.add_bos_token").value_or(false)) {
    const uint64_t bos = g.uint_value("tokenizer.ggml.bos_token_id").value_or(~0ull);
    if (bos >= tokens->count) throw Error(g.label() + ": add_bos_token without a bos_token_id in the vocabulary");
    j["post_processor"] = {{"type", "TemplateProcessing"},
                           {"single", {{{"SpecialToken", {{"id", std::string(tokens->strings[bos])}, {"type_id", 0}}}},
                                       {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}}}};
  }
  j["decoder"] = {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", true}, {"use_regex", true}};
  j["model"] = {{"type", "BPE"},          {"dropout", nullptr},       {"unk_token", nullptr},
                {"byte_fallback", false}, {"ignore_merges", pre == "llama-bpe" || pre == "llama3"},
                {"vocab", vocab},         {"merges", merge_list}};
  return j.dump();
}

}  // namespace

bool gguf_hugging_face_has(const Gguf& g, const std::string& name) {
  if (name == "config.json") return true;
  const GgufValue* v = g.find("tokenizer.ggml.model");
  const std::string kind = v && v->type == GgufValueType::String ? std::string(v->s) : "";
  if (kind.empty() || kind == "none") return false;
  if (name == "tokenizer_config.json") return true;
  return name == (kind == "gpt2" ? "tokenizer.json" : "tokenizer.model");
}

std::optional<std::string> gguf_hugging_face_file(const Gguf& g, const std::string& name) {
  if (name == "config.json") return gguf_hugging_face_config(g);
  const std::string kind = g.string_value("tokenizer.ggml.model").value_or("");
  if (kind == "llama") {
    if (name == "tokenizer.model") return spm_model_proto(g);
    if (name == "tokenizer_config.json") return spm_tokenizer_config(g);
  } else if (kind == "gpt2") {
    if (name == "tokenizer.json") return bpe_tokenizer_json(g);
    // llama.cpp does not clean up spaces when it decodes
    if (name == "tokenizer_config.json") return std::string(R"({"clean_up_tokenization_spaces": false})");
  } else if (!kind.empty() && kind != "none" && name.rfind("tokenizer", 0) == 0) {
    throw Error(g.label() + ": tokenizer.ggml.model '" + kind + "' is not a tokenizer vkformer reads (llama, gpt2)",
                ErrorKind::Unsupported);
  }
  return std::nullopt;
}

// GPT-2's config.json (transformers' GPT2Config names).
std::string gpt2_config(const Gguf& g) {
  const std::string p = "gpt2.";
  nlohmann::ordered_json c;
  c["model_type"] = "gpt2";
  c["n_embd"] = required(g, p + "embedding_length");
  // (llama.cpp's converter writes 4 n_embd whatever n_inner was: the up-projection's rows say)
  const auto up = g.tensors().find("blk.0.ffn_up.weight");
  c["n_inner"] = up != g.tensors().end() && up->second.shape.size() == 2 ? up->second.shape[1]
                                                                          : required(g, p + "feed_forward_length");
  c["n_layer"] = required(g, p + "block_count");
  c["n_head"] = required(g, p + "attention.head_count");
  c["n_positions"] = required(g, p + "context_length");
  c["vocab_size"] = vocabulary(g, "gpt2");
  if (const auto eps = g.float_value(p + "attention.layer_norm_epsilon")) c["layer_norm_epsilon"] = *eps;
  c["tie_word_embeddings"] = g.tensors().count("output.weight") == 0;
  for (const auto& [key, field] : {std::pair{"tokenizer.ggml.bos_token_id", "bos_token_id"},
                                   {"tokenizer.ggml.eos_token_id", "eos_token_id"}})
    if (const auto id = g.uint_value(key)) c[field] = *id;
  return c.dump(1);
}

std::string gguf_hugging_face_config(const Gguf& g) {
  const std::string a = architecture(g), p = a + ".";
  if (a == "gpt2") return gpt2_config(g);
  nlohmann::ordered_json c;
  c["model_type"] = a;
  c["hidden_size"] = required(g, p + "embedding_length");
  c["intermediate_size"] = required(g, p + "feed_forward_length");
  c["num_hidden_layers"] = required(g, p + "block_count");
  const uint64_t heads = required(g, p + "attention.head_count");
  c["num_attention_heads"] = heads;
  c["num_key_value_heads"] = g.uint_value(p + "attention.head_count_kv").value_or(heads);
  c["max_position_embeddings"] = required(g, p + "context_length");
  c["vocab_size"] = vocabulary(g, a);
  if (const auto eps = g.float_value(p + "attention.layer_norm_rms_epsilon")) c["rms_norm_eps"] = *eps;
  if (const auto theta = g.float_value(p + "rope.freq_base")) c["rope_theta"] = *theta;
  // Each head's width: attention.key_length where the file gives it (and the values' the
  // same), as config.json's head_dim; else the width over the heads. The rotary width
  // must be the whole head (transformers' Llama and Qwen2 have no partial rotary).
  uint64_t head = heads ? c["hidden_size"].get<uint64_t>() / heads : 0;
  if (const auto key = g.uint_value(p + "attention.key_length")) {
    if (const auto value = g.uint_value(p + "attention.value_length"); value && *value != *key)
      throw Error(g.label() + ": " + p + "attention.value_length " + std::to_string(*value) + " differs from " + p +
                      "attention.key_length " + std::to_string(*key) + ", which vkformer does not run",
                  ErrorKind::Unsupported);
    if (*key != head) c["head_dim"] = head = *key;
  }
  if (const auto rot = g.uint_value(p + "rope.dimension_count"))
    if (heads && *rot != head)
      throw Error(g.label() + ": " + p + "rope.dimension_count " + std::to_string(*rot) + " is not the head size " +
                      std::to_string(head) + ": vkformer runs rotary positions over whole heads",
                  ErrorKind::Unsupported);
  const std::string scaling = g.string_value(p + "rope.scaling.type").value_or("none");
  if (scaling == "linear") {
    c["rope_scaling"] = {{"type", "linear"}, {"factor", g.float_value(p + "rope.scaling.factor").value_or(1.0)}};
  } else if (scaling != "none") {
    throw Error(g.label() + ": " + p + "rope.scaling.type '" + scaling + "' is not supported (vkformer runs linear)",
                ErrorKind::Unsupported);
  }
  // Llama 3.1's rope scaling, which the converter stores as a factor per frequency
  // (rope_freqs.weight, [head_dim / 2] F32): each frequency divided by its factor, as
  // transformers' llama3 rule scales it.
  if (const auto it = g.tensors().find("rope_freqs.weight"); it != g.tensors().end()) {
    const GgufTensor& t = it->second;
    const uint64_t half = head / 2;
    if (std::string(t.type.name) != "F32" || t.shape.size() != 1 || t.shape[0] != half)
      throw Error(g.label() + ": rope_freqs.weight must be F32 [" + std::to_string(half) + "], a factor per frequency");
    std::vector<double> factors(half);
    for (uint64_t j = 0; j < half; ++j) {
      float f;
      std::memcpy(&f, t.data + 4 * j, 4);
      if (!(f > 0) || !std::isfinite(f)) throw Error(g.label() + ": rope_freqs.weight holds a factor that is not positive");
      factors[j] = f;
    }
    if (c.contains("rope_scaling")) throw Error(g.label() + ": both rope.scaling.type and rope_freqs.weight are given");
    c["rope_freq_factors"] = factors;
  }
  c["tie_word_embeddings"] = g.tensors().count("output.weight") == 0;
  for (const auto& [key, field] : {std::pair{"tokenizer.ggml.bos_token_id", "bos_token_id"},
                                   {"tokenizer.ggml.padding_token_id", "pad_token_id"}})
    if (const auto id = g.uint_value(key)) c[field] = *id;
  // The end of a sequence, then the end of a turn and of a message (an instruct model's
  // <|eot_id|>, <|eom_id|>): a list, as Llama 3's config.json has it, every id ending an output.
  std::vector<uint64_t> ends;
  for (const char* key : {"tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id", "tokenizer.ggml.eom_token_id"})
    if (const auto id = g.uint_value(key); id && std::find(ends.begin(), ends.end(), *id) == ends.end()) ends.push_back(*id);
  if (ends.size() == 1) c["eos_token_id"] = ends[0];
  if (ends.size() > 1) c["eos_token_id"] = ends;
  if (a == "qwen2") c["use_sliding_window"] = false;
  return c.dump(1);
}

// GPT-2's tensors under transformers' names (GPT2LMHeadModel's, "transformer." first).
// Its Conv1D weights are [in, out] there; llama.cpp's converter stores them as Linear
// [out, in] rows, which are kept (GgufHfTensor::rows_are_outputs).
std::string gpt2_name(const std::string& name, bool& conv1d) {
  static const std::pair<const char*, const char*> kLayer[] = {
      {"attn_norm.weight", "ln_1.weight"},         {"attn_norm.bias", "ln_1.bias"},
      {"attn_qkv.weight", "attn.c_attn.weight"},   {"attn_qkv.bias", "attn.c_attn.bias"},
      {"attn_output.weight", "attn.c_proj.weight"}, {"attn_output.bias", "attn.c_proj.bias"},
      {"ffn_norm.weight", "ln_2.weight"},          {"ffn_norm.bias", "ln_2.bias"},
      {"ffn_up.weight", "mlp.c_fc.weight"},        {"ffn_up.bias", "mlp.c_fc.bias"},
      {"ffn_down.weight", "mlp.c_proj.weight"},    {"ffn_down.bias", "mlp.c_proj.bias"}};
  conv1d = false;
  if (name == "token_embd.weight") return "transformer.wte.weight";
  if (name == "position_embd.weight") return "transformer.wpe.weight";
  if (name == "output_norm.weight") return "transformer.ln_f.weight";
  if (name == "output_norm.bias") return "transformer.ln_f.bias";
  if (name == "output.weight") return "lm_head.weight";
  if (name.rfind("blk.", 0) != 0) return "";
  size_t end = 4;
  while (end < name.size() && std::isdigit(static_cast<unsigned char>(name[end]))) ++end;
  if (end == 4 || end >= name.size() || name[end] != '.' || end - 4 > 6) return "";
  for (const auto& [tail, hf_tail] : kLayer)
    if (name.compare(end + 1, std::string::npos, tail) == 0) {
      conv1d = std::string(hf_tail).ends_with("weight") && std::string(hf_tail).find("ln_") == std::string::npos;
      return "transformer.h." + name.substr(4, end - 4) + "." + hf_tail;
    }
  return "";
}

GgufHfTensors gguf_hugging_face_tensors(const Gguf& g) {
  const std::string a = architecture(g);
  const uint64_t heads = required(g, a + ".attention.head_count"),
                 kv_heads = g.uint_value(a + ".attention.head_count_kv").value_or(heads);
  GgufHfTensors out;
  static const std::pair<const char*, const char*> kLayer[] = {
      {"attn_norm.weight", "input_layernorm.weight"},      {"attn_q.weight", "self_attn.q_proj.weight"},
      {"attn_k.weight", "self_attn.k_proj.weight"},        {"attn_v.weight", "self_attn.v_proj.weight"},
      {"attn_q.bias", "self_attn.q_proj.bias"},            {"attn_k.bias", "self_attn.k_proj.bias"},
      {"attn_v.bias", "self_attn.v_proj.bias"},            {"attn_output.weight", "self_attn.o_proj.weight"},
      {"ffn_norm.weight", "post_attention_layernorm.weight"}, {"ffn_gate.weight", "mlp.gate_proj.weight"},
      {"ffn_up.weight", "mlp.up_proj.weight"},             {"ffn_down.weight", "mlp.down_proj.weight"}};
  for (const std::string& name : g.tensor_order()) {
    const GgufTensor& t = g.at(name);
    if (name == "rope_freqs.weight" && a == "llama") continue;  // (read with the config)
    std::string hf;
    bool conv1d = false;
    if (a == "gpt2") hf = gpt2_name(name, conv1d);
    else if (name == "token_embd.weight") hf = "model.embed_tokens.weight";
    else if (name == "output_norm.weight") hf = "model.norm.weight";
    else if (name == "output.weight") hf = "lm_head.weight";
    else if (name.rfind("blk.", 0) == 0) {
      size_t end = 4;
      while (end < name.size() && std::isdigit(static_cast<unsigned char>(name[end]))) ++end;
      if (end > 4 && end < name.size() && name[end] == '.' && end - 4 <= 6)
        for (const auto& [tail, hf_tail] : kLayer)
          if (name.compare(end + 1, std::string::npos, tail) == 0)
            hf = "model.layers." + name.substr(4, end - 4) + "." + hf_tail;
    }
    if (hf.empty())
      throw Error(g.label() + ": tensor '" + name + "' has no place in a " + a + " model vkformer runs",
                  ErrorKind::Unsupported);
    GgufHfTensor h;
    h.shape.assign(t.shape.rbegin(), t.shape.rend());  // ggml's ne[0] is the row: transformers' last
    if (conv1d) {
      if (h.shape.size() != 2) throw Error(g.label() + ": tensor '" + name + "' is not a matrix");
      std::swap(h.shape[0], h.shape[1]);  // Conv1D's [in, out], its rows still the outputs'
      h.rows_are_outputs = true;
    }
    h.ggml_type = t.type.name;
    h.data = t.data, h.bytes = t.bytes;
    for (BlockType b : kBlockTypes) {
      std::string n = block_type_name(b);
      for (char& ch : n) ch = char(std::toupper(static_cast<unsigned char>(ch)));
      if (n == h.ggml_type) h.blocks = b;
    }
    if (!h.blocks && h.ggml_type != "F32" && h.ggml_type != "F16" && h.ggml_type != "BF16")
      throw Error(g.label() + ": tensor '" + name + "' is " + h.ggml_type +
                      ", which vkformer does not read (F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K)",
                  ErrorKind::Unsupported);
    // llama's Q and K: each head's rows back from llama.cpp's adjacent pairs to halves.
    const bool q = hf.ends_with("q_proj.weight"), k = hf.ends_with("k_proj.weight");
    if (a == "llama" && (q || k)) {
      if (h.shape.size() != 2) throw Error(g.label() + ": tensor '" + name + "' is not a matrix");
      const uint64_t n = q ? heads : kv_heads, rows = h.shape[0], row_bytes = h.bytes / rows, hd = n ? rows / n : 0;
      if (n == 0 || rows % n || hd % 2)
        throw Error(g.label() + ": tensor '" + name + "' has " + std::to_string(rows) + " rows, not whole heads of even size");
      std::vector<uint8_t>& copy = out.owned.emplace_back(h.bytes);
      for (uint64_t head = 0; head < n; ++head)
        for (uint64_t i = 0; i < hd / 2; ++i)
          for (uint64_t j = 0; j < 2; ++j)  // file row head hd + 2i + j is transformers' head hd + j hd/2 + i
            std::memcpy(copy.data() + (head * hd + j * hd / 2 + i) * row_bytes,
                        h.data + (head * hd + 2 * i + j) * row_bytes, row_bytes);
      h.data = copy.data();
    }
    out.tensors.emplace(hf, h);
  }
  return out;
}

}  // namespace vkf::model
