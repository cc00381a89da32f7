// TextStream with every tokenizer family: the pieces are whole characters, add up to
// decode() of every id (the last word included, by finish()), and each push decodes a
// short window, not the whole output: a long output costs O(n) ids decoded, not O(n^2).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "vkformer/tokenizer.hpp"

namespace {

using vkf::Tokenizer;
using vkf::TextStream;

const std::filesystem::path kHf = std::filesystem::path(VKF_SOURCE_DIR) / "tests" / "hf";

// Another tokenizer, counting the ids it is asked to decode.
class Counting : public Tokenizer {
 public:
  explicit Counting(const Tokenizer& inner) : inner_(inner) {}
  std::string decode(const std::vector<uint32_t>& ids) const override {
    decoded += ids.size();
    return inner_.decode(ids);
  }
  uint32_t size() const override { return inner_.size(); }
  std::string describe() const override { return inner_.describe(); }
  mutable uint64_t decoded = 0;

 protected:
  std::vector<uint32_t> encode_valid(std::string_view utf8) const override { return inner_.encode(utf8); }

 private:
  const Tokenizer& inner_;
};

std::vector<std::string> sentences() {
  std::ifstream in(kHf / "sentences.txt");
  std::vector<std::string> out;
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// Every tokenizer kind vkformer reads: byte-level BPE (GPT-2's vocab.json, BART's, a
// tokenizer.json in Llama 3's and Qwen2's layouts), SentencePiece (Marian's, Llama's
// tokenizer.model, a tokenizer.json converted from it) and characters.
const char* const kTokenizers[] = {"gpt2/lm", "bart", "marian", "llama/tokenizer_llama3", "llama/tokenizer_qwen2",
                                   "llama/tokenizer_sentencepiece", "llama/tokenizer_sentencepiece_json",
                                   "llama/tokenizer_bytelevel"};

TEST(TextStream, PiecesAreWholeCharactersAndAddUpToTheTextWithEveryTokenizer) {
  for (const char* name : kTokenizers) {
    SCOPED_TRACE(name);
    const auto tok = Tokenizer::for_model((kHf / name).string());
    for (const std::string& s : sentences()) {
      if (s.empty()) continue;
      const std::vector<uint32_t> ids = tok->encode(s);
      const std::string whole = tok->decode(ids);
      TextStream stream(*tok);
      std::string all;
      for (uint32_t id : ids) {
        const std::string piece = stream.push(id);
        // A broken character is never given out unless the whole text holds one there.
        if (piece.find("\xEF\xBF\xBD") != std::string::npos)
          EXPECT_EQ(whole.compare(all.size(), piece.size(), piece), 0) << s;
        all += piece;
        EXPECT_EQ(whole.compare(0, all.size(), all), 0) << "a piece is not the text's: '" << all << "' of '" << whole << "'";
      }
      all += stream.finish();
      EXPECT_EQ(all, whole) << s;
    }
  }
}

// A long output (every sentence, ten times over) streamed a token at a time: the ids
// decoded over all pushes stay a small multiple of the output's length (whole decodes
// would be n^2 / 2), and the pieces still add up.
TEST(TextStream, EachPushDecodesAShortWindowNotTheWholeOutput) {
  for (const char* name : {"gpt2/lm", "marian", "llama/tokenizer_llama3", "llama/tokenizer_sentencepiece"}) {
    SCOPED_TRACE(name);
    const auto inner = Tokenizer::for_model((kHf / name).string());
    const Counting tok(*inner);
    std::string text;
    for (int round = 0; round < 10; ++round)
      for (const std::string& s : sentences()) text += s + " ";
    std::vector<uint32_t> ids = inner->encode(text);
    ASSERT_GT(ids.size(), 1000u);
    TextStream stream(tok);
    std::string all;
    for (uint32_t id : ids) all += stream.push(id);
    const uint64_t pushes = tok.decoded;
    all += stream.finish();
    EXPECT_EQ(all, inner->decode(ids));
    EXPECT_LT(pushes, 12 * ids.size()) << pushes << " ids decoded for " << ids.size() << " pushes";
  }
}

}  // namespace
