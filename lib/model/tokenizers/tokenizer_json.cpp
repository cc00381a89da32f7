// BartTokenizer::from_tokenizer_json: the `tokenizers` library's tokenizer.json (byte-level
// BPE with GPT-2's, Llama 3's or Qwen2's pattern; SentencePiece-style BPE with byte
// fallback), read and checked; what would change the ids and is not run is refused by name.
#include <nlohmann/json.hpp>

#include "bart_tokenizer.hpp"
#include "gpt_pattern.hpp"
#include "json_file.hpp"
#include "json_vocab.hpp"
#include "vkformer/error.hpp"

namespace vkf::model {

// A field of the wrong type anywhere in the file: an error naming the file and the field.
std::unique_ptr<BartTokenizer> BartTokenizer::from_tokenizer_json(const ModelFiles& files, uint32_t vocab_size) try {
  const std::string file = files.where("tokenizer.json");
  // The file holds the vocabulary and the merges (each at most a few dozen bytes a token).
  const nlohmann::json j = read_json_object(files, "tokenizer.json", "tokenizer", 2 * vocab_file_bytes(vocab_size));
  auto fail = [&](const std::string& what) -> void { throw Error("tokenizer " + file + ": " + what); };
  auto type_of = [](const nlohmann::json& v) { return v.is_object() ? json_limits::field(v, "type", std::string()) : std::string(); };
  std::unique_ptr<BartTokenizer> t(new BartTokenizer());
  t->wrap_ = false;
  t->clean_up_spaces_ = true;  // transformers' default; tokenizer_config.json may say otherwise
  t->source_ = "tokenizer.json";

  // The model: byte-level BPE, nothing that would change its ids.
  const nlohmann::json& model = j.contains("model") ? j["model"] : nlohmann::json();
  if (type_of(model) != "BPE")
    fail("model type '" + type_of(model) + "' is not supported (vkformer reads byte-level BPE tokenizer.json files)");
  // byte_fallback: SentencePiece-style BPE (Llama 2's and TinyLlama's tokenizer.json, converted
  // from their tokenizer.model): Unicode characters, not bytes, are the symbols, and a
  // character outside the vocabulary becomes its UTF-8 bytes' <0xXX> tokens.
  t->spm_ = json_limits::field(model, "byte_fallback", false);
  t->fuse_unk_ = json_limits::field(model, "fuse_unk", false);
  if (model.contains("dropout") && !model["dropout"].is_null()) fail("model.dropout is set (BPE dropout), which vkformer does not run");
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"})
    if (model.contains(key) && !model[key].is_null() && model[key] != "")
      fail(std::string("model.") + key + " is set, which byte-level BPE does not use");
  t->ignore_merges_ = json_limits::field(model, "ignore_merges", false);
  read_json_vocab(model, vocab_size, fail, t->tokens_, t->ids_);
  if (!model.contains("merges") || !model["merges"].is_array()) fail("model.merges must be a list");
  uint32_t rank = 0;
  for (const auto& m : model["merges"]) {
    std::string first, second;
    if (m.is_string()) {  // "a b"
      const std::string text = m.get<std::string>();
      const size_t space = text.find(' ');
      if (space == std::string::npos || text.find(' ', space + 1) != std::string::npos)
        fail("merge '" + text + "' must be two symbols separated by one space");
      first = text.substr(0, space), second = text.substr(space + 1);
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {  // ["a", "b"] (newer files)
      first = m[0].get<std::string>(), second = m[1].get<std::string>();
    } else {
      fail("a merge must be \"a b\" or [\"a\", \"b\"]");
    }
    if (first.find(' ') != std::string::npos || second.find(' ') != std::string::npos)
      fail("a merge's symbols hold no space");
    t->ranks_.emplace(first + " " + second, rank++);  // the first listing of a pair ranks it
    ++t->merges_;
  }
  t->check_tables(file, file);

  if (t->spm_) {
    // SentencePiece's layout as transformers' LlamaConverter writes it: the word-boundary
    // mark before each piece of text and for each space, no pre-tokenizer (a piece of text
    // is one word), and a decoder that undoes it. Another layout would change the ids.
    const nlohmann::json none;
    const nlohmann::json& norm = j.contains("normalizer") ? j["normalizer"] : none;
    const nlohmann::json expected_norm = nlohmann::json::parse(
        R"({"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": "▁"},
            {"type": "Replace", "pattern": {"String": " "}, "content": "▁"}]})");
    if (norm != expected_norm)
      fail("with byte_fallback, the normalizer must be Prepend(\u2581) then Replace(' ', \u2581) as transformers' "
           "LlamaConverter writes it; this one is '" + json_limits::shown(norm) + "'");
    if (j.contains("pre_tokenizer") && !j["pre_tokenizer"].is_null())
      fail("with byte_fallback, pre_tokenizer '" + type_of(j["pre_tokenizer"]) + "' is not supported (vkformer reads "
           "the Prepend/Replace layout with none)");
    const nlohmann::json expected_decoder = nlohmann::json::parse(
        R"({"type": "Sequence", "decoders": [{"type": "Replace", "pattern": {"String": "▁"}, "content": " "},
            {"type": "ByteFallback"}, {"type": "Fuse"}, {"type": "Strip", "content": " ", "start": 1, "stop": 0}]})");
    if (json_limits::field(j, "decoder", nlohmann::json()) != expected_decoder)
      fail("with byte_fallback, the decoder must be Replace(\u2581, ' '), ByteFallback, Fuse, Strip(' ', 1, 0)");
    if (!model.contains("unk_token") || !model["unk_token"].is_string() || !t->ids_.count(model["unk_token"].get<std::string>()))
      fail("with byte_fallback, model.unk_token must be a token of the vocabulary");
    t->unk_ = t->ids_.at(model["unk_token"].get<std::string>());
  } else {
  // The text's path to the model: no normalizer or NFC (Qwen2's); ByteLevel, or Split
  // then ByteLevel.
  if (j.contains("normalizer") && !j["normalizer"].is_null()) {
    if (type_of(j["normalizer"]) != "NFC")
      fail("normalizer '" + type_of(j["normalizer"]) + "' is not supported (vkformer reads byte-level BPE without one, or with NFC)");
    t->nfc_ = true;
  }
  const nlohmann::json& pre = j.contains("pre_tokenizer") ? j["pre_tokenizer"] : nlohmann::json();
  auto byte_level = [&](const nlohmann::json& p, bool regex) {
    if (type_of(p) != "ByteLevel") return false;
    if (json_limits::field(p, "use_regex", true) != regex) fail("pre_tokenizer ByteLevel's use_regex is not what its place needs");
    t->add_prefix_space_ = json_limits::field(p, "add_prefix_space", false);
    return true;
  };
  if (byte_level(pre, true)) {
    t->pattern_ = std::make_unique<GptPattern>();
  } else if (type_of(pre) == "Sequence" && pre.contains("pretokenizers") && pre["pretokenizers"].is_array() &&
             pre["pretokenizers"].size() == 2 && type_of(pre["pretokenizers"][0]) == "Split" &&
             byte_level(pre["pretokenizers"][1], false)) {
    const nlohmann::json& split = pre["pretokenizers"][0];
    if (json_limits::field(split, "behavior", std::string()) != "Isolated" || json_limits::field(split, "invert", false))
      fail("pre_tokenizer Split must be behavior Isolated, not inverted");
    if (!split.contains("pattern") || !split["pattern"].is_object() || !split["pattern"].contains("Regex") ||
        !split["pattern"]["Regex"].is_string())
      fail("pre_tokenizer Split's pattern must be a Regex");
    t->pattern_ = std::make_unique<GptPattern>(split["pattern"]["Regex"].get<std::string>(), file);
  } else if (type_of(pre) == "Sequence" && pre.contains("pretokenizers") && pre["pretokenizers"].is_array() &&
             pre["pretokenizers"].size() == 2 && type_of(pre["pretokenizers"][0]) == "Digits" &&
             byte_level(pre["pretokenizers"][1], true)) {
    // SmolLM's: each digit apart (individual_digits), then GPT-2's pattern on every piece.
    if (!json_limits::field(pre["pretokenizers"][0], "individual_digits", false))
      fail("pre_tokenizer Digits must split individual digits (vkformer does not run runs of digits kept together)");
    t->digits_ = std::make_unique<GptPattern>("\\p{N}", file);
    t->pattern_ = std::make_unique<GptPattern>();
  } else {
    fail("pre_tokenizer '" + type_of(pre) + "' is not supported (vkformer reads ByteLevel, Split then ByteLevel, or "
         "Digits then ByteLevel)");
  }
  if (type_of(json_limits::field(j, "decoder", nlohmann::json())) != "ByteLevel") fail("decoder must be ByteLevel");
  }

  // Added tokens: matched in the text first, tokens of their own; the special ones are
  // left out of decoded text.
  if (j.contains("added_tokens") && j["added_tokens"].is_array())
    for (const auto& a : j["added_tokens"]) {
      if (!a.is_object() || !a.contains("id") || !a["id"].is_number_unsigned() || !a.contains("content") ||
          !a["content"].is_string() || a["content"] == "")
        fail("an added token needs an integer id and a non-empty content");
      if (json_limits::field(a, "single_word", false) || json_limits::field(a, "rstrip", false))
        fail("added token '" + a["content"].get<std::string>() + "' has single_word or rstrip set, which vkformer does not run");
      const std::string content = a["content"];
      if (a["id"].get<uint64_t>() >= vocab_size)  // before it is narrowed: 2^32 + 5 is not 5
        fail("added token '" + json_limits::shown(a["content"], 40) + "' has id " + a["id"].dump() +
             ", outside the model's vocabulary of " + std::to_string(vocab_size));
      const uint32_t id = a["id"].get<uint32_t>();
      if (id >= vocab_size) fail("added token '" + content + "' has id " + std::to_string(id) + ", outside the model's vocabulary");
      if (id >= t->tokens_.size()) t->tokens_.resize(id + 1);
      t->tokens_[id] = content;
      t->ids_[content] = id;
      t->specials_.push_back({content, id, json_limits::field(a, "lstrip", false)});
      if (json_limits::field(a, "special", false)) t->special_ids_.push_back(id);
    }

  // What the post-processor puts around one text (TemplateProcessing's "single").
  const nlohmann::json& post = j.contains("post_processor") ? j["post_processor"] : nlohmann::json();
  if (type_of(post) == "TemplateProcessing") {
    bool seen_text = false;
    for (const auto& piece : json_limits::field(post, "single", nlohmann::json::array())) {
      if (piece.contains("Sequence")) {
        seen_text = true;
        continue;
      }
      if (!piece.contains("SpecialToken") || !piece["SpecialToken"].contains("id") || !piece["SpecialToken"]["id"].is_string())
        fail("post_processor TemplateProcessing: a piece must be a Sequence or a SpecialToken");
      const std::string name = piece["SpecialToken"]["id"];
      const auto it = t->ids_.find(name);
      if (it == t->ids_.end()) fail("post_processor TemplateProcessing names '" + name + "', which is not a token");
      (seen_text ? t->suffix_ : t->prefix_).push_back(it->second);
    }
  } else if (type_of(post) == "RobertaProcessing") {
    // <s> text </s> (RoBERTa's; its offsets options change no id).
    for (const char* key : {"cls", "sep"}) {
      if (!post.contains(key) || !post[key].is_array() || post[key].size() != 2 || !post[key][0].is_string())
        fail(std::string("post_processor RobertaProcessing's ") + key + " must be [token, id]");
      const auto it = t->ids_.find(post[key][0].get<std::string>());
      if (it == t->ids_.end()) fail("post_processor RobertaProcessing names '" + post[key][0].get<std::string>() + "', which is not a token");
      (key == std::string("cls") ? t->prefix_ : t->suffix_).push_back(it->second);
    }
  } else if (!post.is_null() && type_of(post) != "ByteLevel") {
    fail("post_processor '" + type_of(post) + "' is not supported (vkformer reads TemplateProcessing, RobertaProcessing and ByteLevel)");
  }
  // tokenizer_config.json (optional): whether decoding cleans up spaces.
  if (files.has("tokenizer_config.json")) {
    const nlohmann::json c = read_json_object(files, "tokenizer_config.json", "tokenizer");
    if (c.contains("clean_up_tokenization_spaces") && c["clean_up_tokenization_spaces"].is_boolean())
      t->clean_up_spaces_ = c["clean_up_tokenization_spaces"].get<bool>();
  }
  for (size_t i = 0; i < t->tokens_.size(); ++i)
    if (t->tokens_[i].empty()) fail("id " + std::to_string(i) + " has no token (the ids must number the tokens)");
  return t;
} catch (const json_limits::WrongType& e) {
  throw Error("tokenizer " + files.where("tokenizer.json") + ": " + e.what());
}

}  // namespace vkf::model
