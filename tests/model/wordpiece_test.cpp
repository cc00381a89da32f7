// WordPieceTokenizer against transformers' BertTokenizerFast (tokenizer.json) and
// BertTokenizer (vocab.txt), on tests/hf/bert/tokenizer/: all-MiniLM-L6-v2's tokenizer
// files and references.json (tools/hf_references/make_wordpiece_references.py). Each of
// four text-rule variants (lower-case and strip accents, or not) is the same files with
// the normalizer (tokenizer.json) or tokenizer_config.json changed in memory.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "vkformer/error.hpp"
#include "vkformer/tokenizer.hpp"
#include "wordpiece_tokenizer.hpp"

namespace {

using vkf::ModelFiles;
using vkf::model::WordPieceTokenizer;

const std::string kDir = std::string(VKF_SOURCE_DIR) + "/tests/hf/bert/tokenizer/";

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

const nlohmann::json& refs() {
  static const nlohmann::json j = nlohmann::json::parse(slurp(kDir + "references.json"));
  return j;
}

struct Files {  // the variant's files, kept alive while a tokenizer is built from them
  std::string tokenizer_json, vocab, tokenizer_config;
  ModelFiles fast() const { return ModelFiles::in_memory({{"tokenizer.json", tokenizer_json}}); }
  ModelFiles slow() const {
    return ModelFiles::in_memory({{"vocab.txt", vocab}, {"tokenizer_config.json", tokenizer_config}});
  }
};

Files variant(const nlohmann::json& v) {
  nlohmann::json t = nlohmann::json::parse(slurp(kDir + "tokenizer.json"));
  t["normalizer"]["lowercase"] = v["lowercase"];
  t["normalizer"]["strip_accents"] = v["strip_accents"];
  nlohmann::json c = nlohmann::json::parse(slurp(kDir + "tokenizer_config.json"));
  c["do_lower_case"] = v["lowercase"];
  c["strip_accents"] = v["strip_accents"];
  return {t.dump(), slurp(kDir + "vocab.txt"), c.dump()};
}

TEST(WordPiece, IdsMatchBertTokenizerFastAndBertTokenizer) {
  const auto& texts = refs()["texts"];
  for (const auto& [name, v] : refs()["variants"].items()) {
    const Files files = variant(v);
    const auto fast = WordPieceTokenizer::from_tokenizer_json(files.fast(), 30522);
    const auto slow = WordPieceTokenizer::from_vocab_txt(files.slow(), 30522);
    for (size_t i = 0; i < texts.size(); ++i) {
      const std::string text = texts[i];
      SCOPED_TRACE(name + ": text " + std::to_string(i) + " '" + text + "'");
      EXPECT_EQ(fast->encode(text), v["fast"][i].get<std::vector<uint32_t>>());
      EXPECT_EQ(slow->encode(text), v["slow"][i].get<std::vector<uint32_t>>());
      EXPECT_EQ(fast->words(text), v["fast_words"][i].get<std::vector<std::string>>());
      const auto cut = fast->encode_one(text, 8);
      EXPECT_EQ(cut.ids, v["fast_cut"][i].get<std::vector<uint32_t>>());
      EXPECT_EQ(cut.truncated, v["fast"][i].size() > 8);
      EXPECT_EQ(fast->decode(v["fast"][i].get<std::vector<uint32_t>>()), v["decoded"][i].get<std::string>());
    }
    const auto& pairs = refs()["pairs"];
    for (size_t i = 0; i < pairs.size(); ++i) {
      SCOPED_TRACE(name + ": pair " + std::to_string(i));
      const std::string a = pairs[i][0], b = pairs[i][1];
      const auto whole = fast->encode_pair(a, b);
      EXPECT_EQ(whole.ids, v["fast_pairs"][i]["ids"].get<std::vector<uint32_t>>());
      EXPECT_EQ(whole.types, v["fast_pairs"][i]["types"].get<std::vector<uint32_t>>());
      for (const auto* t : {fast.get(), slow.get()}) {
        const auto& ref = v[t == fast.get() ? "fast_pairs_cut" : "slow_pairs_cut"][i];
        const auto cut = t->encode_pair(a, b, 12);
        EXPECT_EQ(cut.ids, ref["ids"].get<std::vector<uint32_t>>());
        EXPECT_EQ(cut.types, ref["types"].get<std::vector<uint32_t>>());
      }
    }
  }
}

// The model directory's tokenizer: tokenizer.json where there is one (as AutoTokenizer
// and sentence-transformers take it), else vocab.txt.
TEST(WordPiece, ModelDirectoryPrefersTokenizerJson) {
  const auto t = vkf::Tokenizer::for_model(kDir);
  EXPECT_NE(t->describe().find("tokenizer.json"), std::string::npos) << t->describe();
  EXPECT_EQ(t->encode("Hello, world!"), refs()["variants"]["uncased"]["fast"][0].get<std::vector<uint32_t>>());
}

// Bounded work: a long word is one [UNK] after a count of its characters, and a text cut
// to a few tokens stops tokenizing there.
TEST(WordPiece, LongInputsCostLinearTime) {
  const auto t = vkf::Tokenizer::for_model(kDir);
  const auto& wp = dynamic_cast<const WordPieceTokenizer&>(*t);
  const std::string word(4 << 20, 'a'), many = [] {
    std::string s;
    for (int i = 0; i < 200000; ++i) s += "word ";
    return s;
  }();
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(t->encode(word), (std::vector<uint32_t>{101, wp.unk_id(), 102}));
  const auto cut = wp.encode_one(many, 256);
  EXPECT_EQ(cut.ids.size(), 256u);
  EXPECT_TRUE(cut.truncated);
  EXPECT_EQ(cut.ids.back(), 102u);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 20.0);
}

TEST(WordPiece, BadFilesAndTextAreNamedErrors) {
  auto refused = [](const std::vector<ModelFiles::File>& files, const std::string& says) {
    try {
      if (files[0].name == "vocab.txt") WordPieceTokenizer::from_vocab_txt(ModelFiles::in_memory(files), 30522);
      else WordPieceTokenizer::from_tokenizer_json(ModelFiles::in_memory(files), 30522);
      ADD_FAILURE() << "accepted; expected: " << says;
    } catch (const vkf::Error& e) {
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
    }
  };
  nlohmann::json t = nlohmann::json::parse(slurp(kDir + "tokenizer.json"));
  const std::string vocab = slurp(kDir + "vocab.txt");
  nlohmann::json bad = t;
  bad["normalizer"] = nullptr;
  std::string s1 = bad.dump();
  refused({{"tokenizer.json", s1}}, "normalizer 'none' is not supported");
  bad = t, bad["pre_tokenizer"] = {{"type", "Whitespace"}};
  std::string s2 = bad.dump();
  refused({{"tokenizer.json", s2}}, "pre_tokenizer 'Whitespace'");
  bad = t, bad["model"]["unk_token"] = "<nope>";
  std::string s3 = bad.dump();
  refused({{"tokenizer.json", s3}}, "unk_token '<nope>' is not a token");
  bad = t, bad["post_processor"]["single"].erase(0);
  std::string s4 = bad.dump();
  refused({{"tokenizer.json", s4}}, "single template");
  bad = t, bad["model"]["vocab"]["hello"] = 40000;
  std::string s5 = bad.dump();
  refused({{"tokenizer.json", s5}}, "must be an integer from 0 to");
  refused({{"vocab.txt", "a\nb\n"}}, "'[UNK]' is not a token");
  const std::string broken = "[PAD]\n[UNK]\n[CLS]\n[SEP]\n\xff\n";
  refused({{"vocab.txt", broken}}, "is not valid UTF-8");
  const std::string config = R"({"do_basic_tokenize": false})";
  refused({{"vocab.txt", vocab}, {"tokenizer_config.json", config}}, "do_basic_tokenize false");
  try {
    WordPieceTokenizer::from_vocab_txt(ModelFiles::in_memory({{"vocab.txt", vocab}}), 20000);
    ADD_FAILURE() << "a vocabulary larger than the model's was accepted";
  } catch (const vkf::Error& e) {
    EXPECT_NE(std::string(e.what()).find("more tokens than the model's vocabulary of 20000"), std::string::npos) << e.what();
  }
  const auto tok = vkf::Tokenizer::for_model(kDir);
  EXPECT_THROW(tok->encode(std::string("bad \xC3 utf8")), vkf::Error);
  EXPECT_THROW(tok->encode(std::string("nul\0byte", 8)), vkf::Error);
}

}  // namespace
