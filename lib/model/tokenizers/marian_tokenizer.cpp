#include "marian_tokenizer.hpp"

#include <sentencepiece_processor.h>

#include <filesystem>

#include "hf_text.hpp"
#include "json_file.hpp"
#include "sentencepiece_model.hpp"
#include "vkformer/error.hpp"
#include "files.hpp"

namespace vkf::model {

MarianTokenizer::MarianTokenizer(const ModelFiles& files, uint32_t vocab_size) {
  source_ = load_sentencepiece(files, "source.spm");
  target_ = load_sentencepiece(files, "target.spm");
  const std::string vocab = files.where("vocab.json");
  const nlohmann::json j = read_json_object(files, "vocab.json", "tokenizer", vocab_file_bytes(vocab_size));
  if (j.size() > vocab_size)
    throw Error("tokenizer " + vocab + ": " + std::to_string(j.size()) + " pieces, more than the model's vocabulary of " +
                std::to_string(vocab_size) + " (config.json)");
  for (const auto& [piece, id] : j.items()) {
    if (!id.is_number_unsigned() || id.get<uint64_t>() >= vocab_size)
      throw Error("tokenizer " + vocab + ": the id of '" + piece + "' must be an integer from 0 to " +
                  std::to_string(vocab_size - 1) + " (the model's vocabulary, config.json)");
    const uint32_t i = id.get<uint32_t>();
    if (i >= pieces_.size()) pieces_.resize(i + 1);
    if (!pieces_[i].empty()) throw Error("tokenizer " + vocab + ": id " + std::to_string(i) + " is given twice");
    pieces_[i] = piece;
    ids_[piece] = i;
  }
  auto special = [&](const char* piece) {
    const auto it = ids_.find(piece);
    if (it == ids_.end()) throw Error("tokenizer " + vocab + ": Marian's vocabulary must hold '" + piece + "'");
    return it->second;
  };
  eos_ = special("</s>");
  unk_ = special("<unk>");
  pad_ = special("<pad>");
  specials_ = {{"</s>", eos_}, {"<unk>", unk_}, {"<pad>", pad_}};
}

MarianTokenizer::~MarianTokenizer() = default;

std::vector<uint32_t> MarianTokenizer::encode_valid(std::string_view text) const {
  // Special tokens written in the text are tokens of their own, as transformers' added-
  // tokens split makes them; the text between them goes to SentencePiece.
  std::vector<uint32_t> ids;
  split_at_special_tokens(text, specials_, [&](std::string_view part) { encode_text(part, ids); }, ids);
  ids.push_back(eos_);
  return ids;
}

void MarianTokenizer::encode_text(std::string_view text, std::vector<uint32_t>& ids) const {
  std::string rest(text);
  // A target-language code such as ">>fra<<" leads multilingual models' inputs: it is a
  // token of its own, not text for SentencePiece (transformers: language_code_re).
  if (rest.rfind(">>", 0) == 0) {
    const size_t end = rest.rfind("<<");
    if (end != std::string::npos && end >= 3) {
      const std::string code = rest.substr(0, end + 2);
      const auto it = ids_.find(code);
      ids.push_back(it == ids_.end() ? unk_ : it->second);
      rest = rest.substr(end + 2);
    }
  }
  std::vector<std::string> pieces;
  if (!rest.empty()) {
    const auto status = source_->Encode(rest, &pieces);
    if (!status.ok()) throw Error("tokenizer: SentencePiece failed: " + status.ToString());
  }
  for (const auto& p : pieces) {
    const auto it = ids_.find(p);
    ids.push_back(it == ids_.end() ? unk_ : it->second);
  }
}

std::string MarianTokenizer::decode(const std::vector<uint32_t>& ids) const {
  std::vector<std::string> pieces;
  for (uint32_t id : ids) {
    // skip_special_tokens: EOS, <unk> and <pad> are skipped wherever they are.
    if (id == eos_ || id == unk_ || id == pad_ || id >= pieces_.size() || pieces_[id].empty()) continue;
    pieces.push_back(pieces_[id]);
  }
  std::string text;
  const auto status = target_->Decode(pieces, &text);
  if (!status.ok()) throw Error("tokenizer: SentencePiece failed: " + status.ToString());
  // transformers replaces the word-boundary mark left in unknown pieces, then strips.
  std::string spaced;
  for (size_t at = 0;;) {
    const size_t mark = text.find("\u2581", at);
    spaced.append(text, at, mark == std::string::npos ? std::string::npos : mark - at);
    if (mark == std::string::npos) break;
    spaced += ' ';
    at = mark + 3;  // U+2581 is 3 bytes
  }
  return clean_up_tokenization(std::string(strip_python(spaced)));
}

std::string MarianTokenizer::describe() const {
  return "sentencepiece (source.spm, target.spm, vocab.json of " + std::to_string(pieces_.size()) + " pieces)";
}

}  // namespace vkf::model
