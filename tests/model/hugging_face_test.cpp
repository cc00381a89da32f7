// Hugging Face Marian and BART directories (written by save_pretrained: tied weights
// dropped, Marian's position table absent) against transformers' own outputs, made by
// tools/hf_references/make_references.py into tests/hf/references.json.
//
// Logits tolerance, ||got - ref|| / ||ref|| per sequence over its real (unpadded)
// positions: fp32 1e-4, fp16 1e-2, for the reasons golden_test.cpp gives. Generated ids
// must match token for token in fp32 (the references' greedy margins are printed by the
// script: the smallest is 2.8e-4 of logits with a spread of ~2, far above fp32 rounding).
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>

#include "support/gpu_test.hpp"
#include "vkformer/model.hpp"
#include "vkformer/tokenizer.hpp"

namespace fs = std::filesystem;

namespace vkf::test {
namespace {

const fs::path kDir = fs::path(VKF_SOURCE_DIR) / "tests" / "hf";

nlohmann::json references() {
  std::ifstream f(kDir / "references.json");
  return nlohmann::json::parse(f);
}

double relative_error(const std::vector<float>& got, const std::vector<std::vector<double>>& want) {
  double num = 0, den = 0;
  size_t i = 0;
  for (const auto& row : want)
    for (double w : row) {
      const double g = got.at(i++);
      num += (g - w) * (g - w);
      den += w * w;
    }
  EXPECT_EQ(i, got.size());
  return std::sqrt(num / den);
}

struct Case {
  const char* model;  // its references
  DType dtype;
  const char* directory = nullptr;  // tests/hf/<directory>, when not <model>
};

class HuggingFace : public GpuTest, public ::testing::WithParamInterface<Case> {};

TEST_P(HuggingFace, LogitsOfPaddedBatchesMatchTransformers) {
  const auto [name, dtype, directory] = GetParam();
  const auto ref = references()[name];
  auto model = Model::load(ctx(), (kDir / (directory ? directory : name)).string(), dtype);
  Session session(model);
  const auto sources = ref["sources"].get<std::vector<std::vector<uint32_t>>>();
  const auto targets = ref["targets"].get<std::vector<std::vector<uint32_t>>>();
  const auto got = session.score(sources, targets);  // one padded batch
  ASSERT_EQ(got.size(), sources.size());
  for (size_t i = 0; i < sources.size(); ++i) {
    const double err = relative_error(got[i], ref["logits"][i].get<std::vector<std::vector<double>>>());
    EXPECT_LT(err, dtype == DType::F16 ? 1e-2 : 1e-4) << name << " sequence " << i;
    RecordProperty(std::string(name) + "_" + std::to_string(i), std::to_string(err));
  }
}

// generate() with the model's own generation_config.json, greedy (num_beams 1) and beam
// (its num_beams): Marian's OPUS-MT settings (pad banned, EOS forced at max_length) and
// BART's bart-large-cnn ones (forced BOS, min_length, no_repeat_ngram_size 3,
// length_penalty 2, early_stopping).
// (fp32 only: in fp16 a near tie may legitimately flip.)
class HuggingFaceGenerate : public GpuTest, public ::testing::WithParamInterface<const char*> {};

TEST_P(HuggingFaceGenerate, MatchesTransformersTokenForToken) {
  const char* name = GetParam();
  const auto ref = references()[name];
  auto model = Model::load(ctx(), (kDir / name).string(), DType::F32);
  Session session(model);
  const auto sources = ref["sources"].get<std::vector<std::vector<uint32_t>>>();
  GenerateOptions o = GenerateOptions::defaults(model->config());
  EXPECT_GT(o.beam, 1u);
  const auto beam = ref["generate"]["beam"]["ids"].get<std::vector<std::vector<uint32_t>>>();
  for (size_t i = 0; i < sources.size(); ++i) EXPECT_EQ(session.generate({sources[i]}, o)[0], beam[i]) << "beam, source " << i;
  o.beam = 1;
  const auto greedy = session.generate(sources, o);
  EXPECT_EQ(greedy, ref["generate"]["greedy"]["ids"].get<std::vector<std::vector<uint32_t>>>()) << "greedy, padded batch";
  // batch_decode(skip_special_tokens=True) of transformers' outputs: BART's include a lone
  // byte of a UTF-8 sequence, which decodes to U+FFFD.
  const auto tokenizer = Tokenizer::for_model((kDir / name).string());
  for (const char* search : {"greedy", "beam"})
    for (size_t i = 0; i < sources.size(); ++i)
      EXPECT_EQ(tokenizer->decode(ref["generate"][search]["ids"][i].get<std::vector<uint32_t>>()),
                ref["generate"][search]["text"][i].get<std::string>()) << search << ", source " << i;
}

// The real slow tokenizers' ids and decodings (skip_special_tokens) of tests/hf's
// sentence list: accents, CJK, emoji, digits, whitespace runs, special tokens in the text.
void expect_tokenizations(const std::string& model) {
  const auto tokenizer = Tokenizer::for_model((kDir / model).string());
  const nlohmann::json ref = references()[model];  // (a local: the loop must not range over a temporary's member)
  for (const auto& t : ref["tokenizations"]) {
    const std::string text = t["text"];
    EXPECT_EQ(tokenizer->encode(text), t["ids"].get<std::vector<uint32_t>>()) << "'" << text << "'";
    EXPECT_EQ(tokenizer->decode(t["ids"].get<std::vector<uint32_t>>()), t["decoded"].get<std::string>()) << "'" << text << "'";
  }
}

// MarianTokenizer: CJK is outside this small vocabulary (<unk>).
TEST(HuggingFaceTokenizer, MarianMatchesTransformers) { expect_tokenizations("marian"); }

// BartTokenizer: GPT-2's byte-level BPE, so nothing is unknown; emoji and CJK are bytes.
TEST(HuggingFaceTokenizer, BartMatchesTransformers) { expect_tokenizations("bart"); }

// Generated ids need not end on a whole UTF-8 character: their bytes decode as Python's
// bytes.decode("utf-8", errors="replace") does, one U+FFFD per maximal ill-formed part
// (the expectations are Python's own). Each byte is its token in GPT-2's byte alphabet.
TEST(HuggingFaceTokenizer, BartDecodesBrokenUtf8AsPython) {
  const auto tokenizer = Tokenizer::for_model((kDir / "bart").string());
  nlohmann::json vocab;
  std::ifstream(kDir / "bart" / "vocab.json") >> vocab;
  auto ids_of = [&](const std::string& bytes) {
    std::vector<uint32_t> ids{0};  // <s>, skipped
    for (unsigned char b : bytes) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
      char32_t c = b;
      if (!printable) {  // bytes_to_unicode: the others from U+0100 on, in byte order
        c = 0x100;
        for (unsigned o = 0; o < b; ++o) c += !((o >= '!' && o <= '~') || (o >= 0xA1 && o <= 0xAC) || o >= 0xAE);
      }
      std::string token;
      if (c < 0x80) token += char(c);
      else token += char(0xC0 | (c >> 6)), token += char(0x80 | (c & 0x3F));
      ids.push_back(vocab.at(token).get<uint32_t>());
    }
    ids.push_back(2);  // </s>
    return ids;
  };
  const std::pair<const char*, const char*> cases[] = {
      {"\xe6\x97" "a", "\uFFFD" "a"},
      {"\xf0\x9f\x99\x82", "\U0001F642"},
      {"\xf0\x9f x", "\uFFFD x"},
      {"\xed\xa0\x80", "\uFFFD\uFFFD\uFFFD"},  // a surrogate's encoding
      {"\xc0\xaf", "\uFFFD\uFFFD"},            // an overlong one
      {"\xf4\x90\x80\x80", "\uFFFD\uFFFD\uFFFD\uFFFD"},  // past U+10FFFF
      {"\xe0\x80\xaf", "\uFFFD\uFFFD\uFFFD"},
      {"\xf1\x80\x80", "\uFFFD"},              // cut short
      {"\xff", "\uFFFD"}};
  for (const auto& [bytes, text] : cases) EXPECT_EQ(tokenizer->decode(ids_of(bytes)), text) << ::testing::PrintToString(bytes);
  // Ids the vocabulary does not have are an error, not skipped text.
  EXPECT_THROW(tokenizer->decode({0, uint32_t(tokenizer->size()) + 5, 2}), Error);
}

// Malformed or unsupported directories: each error names the file and the field.
class HuggingFaceBadInput : public GpuTest {
 protected:
  // A copy of tests/hf/<model>, to spoil.
  fs::path copy(const std::string& tag, const std::string& model = "marian") {
    const fs::path d = fs::path(scratch_dir("hf_" + tag)) / model;
    fs::remove_all(d);
    fs::create_directories(d.parent_path());
    fs::copy(kDir / model, d, fs::copy_options::recursive);
    return d;
  }
  static void edit_json(const fs::path& file, const std::function<void(nlohmann::json&)>& edit) {
    nlohmann::json j;
    std::ifstream(file) >> j;
    edit(j);
    std::ofstream(file) << j.dump();
  }
  void expect_error(const fs::path& dir, const std::vector<std::string>& words, bool tokenizer = false) {
    try {
      if (tokenizer)
        Tokenizer::for_model(dir.string());
      else
        Model::load(ctx(), dir.string());
      ADD_FAILURE() << "no error for " << dir;
    } catch (const Error& e) {
      for (const auto& w : words) EXPECT_NE(std::string(e.what()).find(w), std::string::npos) << e.what() << " lacks " << w;
    }
  }
};

TEST_F(HuggingFaceBadInput, UnsupportedOrMalformedDirectoriesAreNamed) {
  auto d = copy("type");
  edit_json(d / "config.json", [](auto& j) { j["model_type"] = "t5"; });
  expect_error(d, {"config.json", "model_type", "t5", "marian"});

  d = copy("act");
  edit_json(d / "config.json", [](auto& j) { j["activation_function"] = "mish"; });
  expect_error(d, {"config.json", "activation_function", "mish"});

  d = copy("prenorm");
  edit_json(d / "config.json", [](auto& j) { j["normalize_before"] = true; });
  expect_error(d, {"config.json", "normalize_before"});

  d = copy("sampling");
  edit_json(d / "generation_config.json", [](auto& j) {
    j["do_sample"] = true;
    j["typical_p"] = 0.5;
  });
  expect_error(d, {"generation_config.json", "typical_p", "not supported"});

  d = copy("diversity");
  edit_json(d / "generation_config.json", [](auto& j) { j["diversity_penalty"] = 0.5; });
  expect_error(d, {"generation_config.json", "diversity_penalty", "not supported"});

  d = copy("repetition");  // honoured, within its range
  edit_json(d / "generation_config.json", [](auto& j) { j["repetition_penalty"] = -1.2; });
  expect_error(d, {"generation_config.json", "repetition_penalty"});

  d = copy("shape");
  edit_json(d / "config.json", [](auto& j) { j["encoder_ffn_dim"] = 48; j["decoder_ffn_dim"] = 48; });
  expect_error(d, {"fc1.weight", "shape"});

  d = copy("bin");
  fs::remove(d / "model.safetensors");
  std::ofstream(d / "pytorch_model.bin") << "pickle";
  expect_error(d, {"pytorch_model.bin", "save_pretrained", "model.safetensors"});

  d = copy("spm");
  fs::remove(d / "target.spm");
  expect_error(d, {"target.spm"}, true);

  d = copy("vocab");
  edit_json(d / "vocab.json", [](auto& j) { j.erase("<pad>"); });
  expect_error(d, {"vocab.json", "<pad>"}, true);
}

// A sharded checkpoint's index must agree with its shards, and name files beside it.
TEST_F(HuggingFaceBadInput, ShardedCheckpointsAreChecked) {
  const std::string first = "model-00001-of-00002.safetensors", second = "model-00002-of-00002.safetensors";
  auto d = copy("shard_missing", "marian_sharded");
  fs::remove(d / second);
  expect_error(d, {second, "cannot open"});

  d = copy("shard_moved", "marian_sharded");  // the index puts a tensor in the wrong shard
  edit_json(d / "model.safetensors.index.json", [&](auto& j) { j["weight_map"]["final_logits_bias"] = second; });
  expect_error(d, {first, "final_logits_bias", "model.safetensors.index.json", "puts in " + second});

  d = copy("shard_unlisted", "marian_sharded");
  edit_json(d / "model.safetensors.index.json", [&](auto& j) { j["weight_map"].erase("final_logits_bias"); });
  expect_error(d, {first, "final_logits_bias", "does not list"});

  d = copy("shard_path", "marian_sharded");
  edit_json(d / "model.safetensors.index.json", [&](auto& j) { j["weight_map"]["final_logits_bias"] = "../" + first; });
  expect_error(d, {"model.safetensors.index.json", "not a file name in the checkpoint's directory"});

  d = copy("shard_map", "marian_sharded");
  edit_json(d / "model.safetensors.index.json", [&](auto& j) { j.erase("weight_map"); });
  expect_error(d, {"model.safetensors.index.json", "weight_map"});

  d = copy("shard_none", "marian_sharded");
  fs::remove(d / "model.safetensors.index.json");
  expect_error(d, {"missing model.safetensors", "model.safetensors.index.json"});
}

TEST_F(HuggingFaceBadInput, BartTokenizerFilesAreChecked) {
  auto d = copy("merges_missing", "bart");
  fs::remove(d / "merges.txt");
  expect_error(d, {"merges.txt"}, true);

  d = copy("merges_line", "bart");
  std::ofstream(d / "merges.txt", std::ios::app) << "a b c\n";
  expect_error(d, {"merges.txt", "line 302", "a b c"}, true);

  d = copy("vocab_id", "bart");
  edit_json(d / "vocab.json", [](auto& j) { j["h"] = 99999; });
  expect_error(d, {"vocab.json", "'h'", "id"}, true);

  d = copy("added", "bart");
  std::ofstream(d / "added_tokens.json") << R"({"<extra>": 561})";
  expect_error(d, {"added_tokens.json", "<extra>"}, true);

  d = copy("prefix", "bart");
  edit_json(d / "tokenizer_config.json", [](auto& j) { j["add_prefix_space"] = "yes"; });
  expect_error(d, {"tokenizer_config.json", "add_prefix_space"}, true);

  // Text that is not UTF-8 is refused where it is wrong, not cut into bytes or read as U+FFFD.
  for (const char* model : {"bart", "marian"}) {
    const auto tokenizer = Tokenizer::for_model((kDir / model).string());
    try {
      tokenizer->encode("ok \xff\xfe");
      ADD_FAILURE() << model << ": no error for text that is not UTF-8";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("UTF-8 (byte 3)"), std::string::npos) << e.what();
    }
  }
}

// Marian and BART with every LayerNorm folded into the GEMMs that read it (BART's
// embedding norm pending into its first layer), on this device forced and under the
// portable profile: the same logits as transformers, 5 dispatches per encoder layer.
TEST(HuggingFaceFolded, EveryNormFoldedStillMatchesTransformers) {
  for (const char* profile : {"", "portable"})
    for (const char* name : {"marian", "bart"}) {
      SCOPED_TRACE(std::string(name) + (*profile ? " (portable)" : ""));
      MessageLog log;
      ContextOptions o = test_options(log);
      if (*profile) o.profile = profile;
      o.policy = Policy{.fold_norms = true};
      Context ctx(o);
      const auto ref = references()[name];
      auto model = Model::load(ctx, (kDir / name).string(), DType::F32);
      Session session(model);
      const auto sources = ref["sources"].get<std::vector<std::vector<uint32_t>>>();
      const auto got = session.score(sources, ref["targets"].get<std::vector<std::vector<uint32_t>>>());
      for (size_t i = 0; i < sources.size(); ++i)
        EXPECT_LT(relative_error(got[i], ref["logits"][i].get<std::vector<std::vector<double>>>()), 1e-4)
            << "sequence " << i;
      GenerateOptions g = GenerateOptions::defaults(model->config());
      g.beam = 1;
      EXPECT_EQ(session.generate(sources, g), ref["generate"]["greedy"]["ids"].get<std::vector<std::vector<uint32_t>>>());
      // Folding saves each encoder layer its two LayerNorm dispatches, whatever else runs:
      // a card's tuned table may split a product's K, adding its reduction to both counts
      // (an H200's fp32 table at M > 64: 6 folded).
      const double folded = session.last_stats().dispatches_per_encoder_layer;
      {
        const ScopedPolicy unfold(ctx, [](Policy& p) { p.fold_norms = false; });
        Session unfolded(model);
        unfolded.generate(sources, g);
        EXPECT_LE(folded + 2, unfolded.last_stats().dispatches_per_encoder_layer);
      }
      EXPECT_TRUE(log.messages.empty()) << log.messages.front();
    }
}

INSTANTIATE_TEST_SUITE_P(Models, HuggingFaceGenerate, ::testing::Values("marian", "bart"),
                         [](const auto& info) { return std::string(info.param); });

INSTANTIATE_TEST_SUITE_P(Models, HuggingFace,
                         ::testing::Values(Case{"marian", DType::F32}, Case{"bart", DType::F32},
                                           Case{"marian", DType::F16}, Case{"bart", DType::F16},
                                           // the Marian weights in two shards and an index
                                           Case{"marian", DType::F32, "marian_sharded"}),
                         [](const auto& info) {
                           const Case& c = info.param;
                           return std::string(c.directory ? c.directory : c.model) +
                                  (c.dtype == DType::F16 ? "_fp16" : "_fp32");
                         });

}  // namespace
}  // namespace vkf::test
