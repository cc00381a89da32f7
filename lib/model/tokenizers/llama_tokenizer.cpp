#include "llama_tokenizer.hpp"

#include <sentencepiece_processor.h>

#include "json_file.hpp"
#include "sentencepiece_model.hpp"
#include "vkformer/error.hpp"

namespace vkf::model {

namespace {

const std::string kMark = "\u2581";  // SentencePiece's word boundary (transformers' SPIECE_UNDERLINE)

std::vector<std::string> pieces_of(const sentencepiece::SentencePieceProcessor& sp, std::string_view text) {
  std::vector<std::string> pieces;
  const auto status = sp.Encode(text, &pieces);
  if (!status.ok()) throw Error("tokenizer: SentencePiece failed: " + status.ToString());
  return pieces;
}

}  // namespace

LlamaTokenizer::LlamaTokenizer(const ModelFiles& files, uint32_t vocab_size) {
  const std::string config_file = files.where("tokenizer_config.json");
  nlohmann::json config = nlohmann::json::object();
  if (files.has("tokenizer_config.json")) config = read_json_object(files, "tokenizer_config.json", "tokenizer");
  auto fail = [&](const std::string& why) -> void { throw Error("tokenizer " + config_file + ": " + why); };
  auto flag = [&](const char* key, bool fallback) {
    const auto it = config.find(key);
    if (it == config.end() || it->is_null()) return fallback;
    if (!it->is_boolean()) fail(std::string("'") + key + "' must be true or false");
    return it->get<bool>();
  };
  // transformers 4.36's defaults: legacy when the file does not say (with a warning there).
  legacy_ = flag("legacy", true);
  add_bos_ = flag("add_bos_token", true);
  add_eos_ = flag("add_eos_token", false);
  clean_up_spaces_ = flag("clean_up_tokenization_spaces", false);
  // A special token's text: a string, or an AddedToken object's "content".
  auto token_text = [&](const char* key, const char* fallback) -> std::string {
    const auto it = config.find(key);
    if (it == config.end()) return fallback;
    if (it->is_null()) return "";
    if (it->is_string()) return it->get<std::string>();
    if (it->is_object() && it->contains("content") && (*it)["content"].is_string()) return (*it)["content"].get<std::string>();
    fail(std::string("'") + key + "' must be a token's text or an AddedToken");
    return "";
  };

  sp_ = load_sentencepiece(files, "tokenizer.model", !legacy_);
  size_ = uint32_t(sp_->GetPieceSize());
  if (size_ > vocab_size)
    throw Error("tokenizer " + files.where("tokenizer.model") + ": " + std::to_string(size_) +
                " pieces, more than the model's vocabulary of " + std::to_string(vocab_size) + " (config.json)");
  special_.assign(size_, false);
  auto special = [&](const char* key, const char* fallback, bool required) -> uint32_t {
    const std::string text = token_text(key, fallback);
    if (text.empty()) {
      if (required) fail(std::string("'") + key + "' is null, and LlamaTokenizer needs one");
      return UINT32_MAX;
    }
    const int id = sp_->PieceToId(text);
    if (id < 0 || uint32_t(id) >= size_ || sp_->IdToPiece(id) != text)
      fail(std::string("'") + key + "' is '" + text + "', which is not a piece of tokenizer.model");
    specials_.push_back({text, uint32_t(id)});
    special_[uint32_t(id)] = true;
    return uint32_t(id);
  };
  unk_ = special("unk_token", "<unk>", true);
  bos_ = special("bos_token", "<s>", true);
  eos_ = special("eos_token", "</s>", true);
  special("pad_token", "", false);
  // Tokens added beyond the model's pieces would need ids of their own: refused by name.
  if (const auto it = config.find("added_tokens_decoder"); it != config.end() && it->is_object())
    for (const auto& [id, token] : it->items()) try {
      const std::string text = token.is_object() ? json_limits::field(token, "content", std::string()) : std::string();
      const int piece = sp_->PieceToId(text);
      if (text.empty() || piece < 0 || std::to_string(piece) != id || sp_->IdToPiece(piece) != text)
        fail("added token " + id + " ('" + text + "') is not that piece of tokenizer.model (vkformer runs the model's own pieces only)");
      if (json_limits::field(token, "special", false) && !special_[uint32_t(piece)]) {
        specials_.push_back({text, uint32_t(piece)});
        special_[uint32_t(piece)] = true;
      }
    } catch (const json_limits::WrongType& e) {
      fail("added token " + id + ": " + e.what());
    }
  unk_text_ = sp_->IdToPiece(int(unk_));
  unk_pieces_ = pieces_of(*sp_, unk_text_).size();
}

LlamaTokenizer::~LlamaTokenizer() = default;

void LlamaTokenizer::encode_text(std::string_view text, std::vector<uint32_t>& ids) const {
  std::vector<std::string> pieces;
  if (legacy_ || !(text.substr(0, kMark.size()) == kMark || text.substr(0, 1) == " ")) {
    pieces = pieces_of(*sp_, text);
  } else {
    // Without the dummy prefix SentencePiece drops a leading mark; transformers encodes
    // "<unk>" + text and removes the pieces of "<unk>" to keep it.
    pieces = pieces_of(*sp_, unk_text_ + std::string(text));
    pieces.erase(pieces.begin(), pieces.begin() + std::min(unk_pieces_, pieces.size()));
  }
  for (const std::string& p : pieces) ids.push_back(uint32_t(sp_->PieceToId(p)));
}

std::vector<uint32_t> LlamaTokenizer::encode_valid(std::string_view text) const {
  std::vector<uint32_t> ids;
  if (add_bos_) ids.push_back(bos_);
  const size_t first = ids.size();
  if (legacy_) {
    split_at_special_tokens(text, specials_, [&](std::string_view part) { encode_text(part, ids); }, ids);
  } else if (!text.empty()) {
    // The mark once before the whole text, marks the text holds as spaces.
    std::string marked = kMark;
    for (size_t at = 0;;) {
      const size_t m = text.find(kMark, at);
      marked.append(text.substr(at, m == std::string_view::npos ? std::string_view::npos : m - at));
      if (m == std::string_view::npos) break;
      marked += ' ';
      at = m + kMark.size();
    }
    // A lone mark before a special token that starts the text is dropped (transformers'
    // tokenize): which ids the text gave, to tell them from the specials'.
    size_t first_text_ids = 0;
    bool first_part = true;
    split_at_special_tokens(marked, specials_, [&](std::string_view part) {
      const size_t before = ids.size();
      encode_text(part, ids);
      if (first_part && before == first) first_text_ids = ids.size() - before;
      first_part = false;
    }, ids);
    if (first_text_ids == 1 && ids.size() > first + 1 && sp_->IdToPiece(int(ids[first])) == kMark)
      ids.erase(ids.begin() + first);
  }
  if (add_eos_) ids.push_back(eos_);
  return ids;
}

std::string LlamaTokenizer::decode(const std::vector<uint32_t>& ids) const {
  std::vector<std::string> pieces;
  for (uint32_t id : ids)  // skip_special_tokens
    if (id < size_ && !special_[id]) pieces.push_back(sp_->IdToPiece(int(id)));
  if (pieces.empty()) return "";
  // "since we manually add the prefix space, we have to remove it when decoding"
  if (pieces[0].rfind(kMark, 0) == 0) pieces[0].erase(0, kMark.size());
  std::string text;
  const auto status = sp_->Decode(pieces, &text);
  if (!status.ok()) throw Error("tokenizer: SentencePiece failed: " + status.ToString());
  return clean_up_spaces_ ? clean_up_tokenization(text) : text;
}

std::string LlamaTokenizer::describe() const {
  return "sentencepiece BPE (tokenizer.model: " + std::to_string(size_) + " pieces" + (legacy_ ? ", legacy" : "") + ")";
}

}  // namespace vkf::model
