// Model files as an attacker writes them (issue: untrusted files, round two): JSON
// nested past any real file is refused before anything is built, even on a thread with
// a small stack; a tokenizer whose tables would give wrong ids is refused at load; a
// field of the wrong type is named with its file; generation settings a decoder-only
// model does not run are refused by name, and its max_length is taken as transformers
// takes it. The deep documents are generated here, never committed.
#include <gtest/gtest.h>
#include <pthread.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "vkformer/gemm_tuning.hpp"
#include "vkformer/model.hpp"
#include "vkformer/tokenizer.hpp"
#include "sanitized.hpp"

namespace fs = std::filesystem;

namespace vkf::test {
namespace {

const fs::path kHf = fs::path(VKF_SOURCE_DIR) / "tests" / "hf";

// A scratch copy of a model directory, removed at the end.
struct Copy {
  fs::path dir;
  explicit Copy(const fs::path& from) {
    static int n = 0;
    dir = fs::temp_directory_path() / ("vkf_untrusted_" + std::to_string(::getpid()) + "_" + std::to_string(n++));
    fs::remove_all(dir);
    fs::copy(from, dir, fs::copy_options::recursive);
  }
  ~Copy() { fs::remove_all(dir); }
  void write(const std::string& name, const std::string& bytes) const {
    std::ofstream(dir / name, std::ios::binary | std::ios::trunc) << bytes;
  }
  nlohmann::json json(const std::string& name) const { return nlohmann::json::parse(std::ifstream(dir / name)); }
};

std::string nested(size_t depth, const std::string& inner = "1") {
  return std::string(depth, '[') + inner + std::string(depth, ']');
}

// Runs f on a thread with a 256 KiB stack (an app's worker threads often have little):
// a recursive parse, copy or destructor of a deep document would overflow it.
void on_small_stack(const std::function<void()>& f) {
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 256 << 10);
  pthread_t thread;
  auto body = [](void* p) -> void* {
    (*static_cast<const std::function<void()>*>(p))();
    return nullptr;
  };
  ASSERT_EQ(pthread_create(&thread, &attr, body, const_cast<std::function<void()>*>(&f)), 0);
  pthread_join(thread, nullptr);
  pthread_attr_destroy(&attr);
}

// `load` fails with a vkf::Error whose message holds every part.
void expect_refused(const std::function<void()>& load, std::initializer_list<std::string> parts) {
  std::string message = "(no error)";
  on_small_stack([&] {
    try {
      load();
    } catch (const Error& e) {
      message = e.what();
    } catch (const std::exception& e) {
      message = std::string("not a vkf::Error: ") + e.what();
    }
  });
  for (const std::string& p : parts) EXPECT_NE(message.find(p), std::string::npos) << "want '" << p << "' in: " << message;
  EXPECT_LT(message.size(), 1000u) << "an untrusted value in the message, unbounded";
}

TEST(UntrustedFiles, DeeplyNestedJsonIsRefusedBeforeAnythingIsBuilt) {
  const std::string deep = nested(300000);
  {
    Copy c(kHf / "llama" / "with_tokenizer");
    // The tokenizer's model replaced by 300,000 nested arrays.
    nlohmann::json t = c.json("tokenizer.json");
    t["model"] = nullptr;
    std::string whole = t.dump();
    whole.replace(whole.find("\"model\":null"), 12, "\"model\":" + deep);
    c.write("tokenizer.json", whole);
    expect_refused([&] { Tokenizer::for_model(c.dir.string()); }, {"tokenizer.json", "nested more than 64 levels"});
    c.write("tokenizer.json", "{\"normalizer\": " + nested(100000, "{}") + "}");
    expect_refused([&] { Tokenizer::for_model(c.dir.string()); }, {"tokenizer.json", "nested more than 64 levels"});
    c.write("config.json", "{\"model_type\": \"llama\", \"rope_scaling\": " + deep + "}");
    expect_refused([&] { model_architecture(c.dir.string()); }, {"config.json", "nested more than 64 levels"});
  }
  {
    Copy c(fs::path(VKF_SOURCE_DIR) / "samples" / "dates");
    c.write("vocab.json", "{\"tokens\": [\"a\"], \"pad_id\": " + nested(50000) + "}");  // within its size bound
    expect_refused([&] { Tokenizer::for_model(c.dir.string()); }, {"vocab.json", "nested more than 64 levels"});
  }
  {
    Copy c(kHf / "llama" / "gqa");
    c.write("generation_config.json", "{\"num_beams\": " + deep + "}");
    Context ctx;
    expect_refused([&] { Model::load(ctx, c.dir.string()); }, {"generation_config.json", "nested more than 64 levels"});
    c.write("generation_config.json", "{}");
    // A safetensors header nested as deep.
    const std::string header = "{\"a\": {\"dtype\": \"F32\", \"shape\": " + deep + ", \"data_offsets\": [0, 0]}}";
    std::string file(8, '\0');
    const uint64_t n = header.size();
    for (int i = 0; i < 8; ++i) file[i] = char((n >> (8 * i)) & 0xFF);
    c.write("model.safetensors", file + header);
    expect_refused([&] { Model::load(ctx, c.dir.string()); }, {"model.safetensors", "nested more than 64 levels"});
  }
  // The tuning file in a cache directory (at most 64 KiB: 32,000 levels).
  std::string why;
  std::optional<GemmTuning> tuning;
  on_small_stack([&] {
    tuning = parse_gemm_tuning("{\"schema\": " + nested(32000) + "}", "id", Capabilities{}, DType::F32, &why);
  });
  EXPECT_FALSE(tuning);
  EXPECT_NE(why.find("nested more than 64 levels"), std::string::npos) << why;
}

// Tables that would silently give wrong ids: a merge whose result (or symbol) is not in
// the vocabulary, a byte-level vocabulary without a byte's symbol, an added token whose
// id only fits after wrapping.
TEST(UntrustedFiles, TokenizerTablesThatWouldGiveWrongIdsAreRefusedAtLoad) {
  {
    Copy c(kHf / "gpt2" / "lm");
    std::ifstream in(c.dir / "merges.txt");
    std::string merges((std::istreambuf_iterator<char>(in)), {});
    c.write("merges.txt", merges + "H ello\n");
    expect_refused([&] { Tokenizer::for_model(c.dir.string()); }, {"merges.txt", "'H ello'", "not in the vocabulary"});
    c.write("merges.txt", merges);
    nlohmann::json vocab = c.json("vocab.json");
    const uint32_t id = vocab["\xC4\x80"];  // "Ā": byte 0x00's symbol
    vocab.erase("\xC4\x80");
    vocab["not a byte"] = id;
    c.write("vocab.json", vocab.dump());
    expect_refused([&] { Tokenizer::for_model(c.dir.string()); }, {"vocab.json", "byte 0x00", "not in the vocabulary"});
  }
  Copy c(kHf / "llama" / "with_tokenizer");
  nlohmann::json t = c.json("tokenizer.json");
  const nlohmann::json good = t;
  t["model"]["merges"].push_back("Q Z");
  c.write("tokenizer.json", t.dump());
  expect_refused([&] { Tokenizer::for_model(c.dir.string()); }, {"tokenizer.json", "'Q Z'", "not in the vocabulary"});
  t = good;
  t["added_tokens"].push_back({{"id", (1ull << 32) + 5}, {"content", "<wrapped>"}, {"special", true}});
  c.write("tokenizer.json", t.dump());
  expect_refused([&] { Tokenizer::for_model(c.dir.string()); }, {"tokenizer.json", "4294967301", "outside the model's vocabulary"});
  // A field of the wrong type: the file and the field, never nlohmann's bare type_error.
  t = good;
  t["added_tokens"][0]["special"] = "yes";
  c.write("tokenizer.json", t.dump());
  expect_refused([&] { Tokenizer::for_model(c.dir.string()); }, {"tokenizer.json", "field 'special' must be true or false"});
  t = good;
  t["model"]["byte_fallback"] = "no";
  c.write("tokenizer.json", t.dump());
  expect_refused([&] { Tokenizer::for_model(c.dir.string()); }, {"tokenizer.json", "field 'byte_fallback'"});
}

// generation_config.json of a decoder-only model: what its generation applies (beams and
// transformers' processors) becomes its defaults; what it would not apply is refused by
// name (it once loaded and was ignored); max_length is the prompt's and the new tokens'
// together, as in transformers.
TEST(UntrustedFiles, DecoderOnlyGenerationSettingsAreHonouredOrRefused) {
  Copy c(kHf / "llama" / "gqa");
  Context ctx;
  const nlohmann::json base = c.json("generation_config.json");
  {
    nlohmann::json g = base;
    g.update({{"num_beams", 3}, {"num_return_sequences", 2}, {"early_stopping", "never"}, {"no_repeat_ngram_size", 3},
              {"bad_words_ids", {{5}}}, {"min_length", 4}, {"min_new_tokens", 2}, {"forced_eos_token_id", 2}});
    c.write("generation_config.json", g.dump());
    const GenerateOptions o = GenerateOptions::defaults(Model::load(ctx, c.dir.string())->config(), 3);
    EXPECT_EQ(o.beam, 3u);
    EXPECT_EQ(o.num_return_sequences, 2u);
    EXPECT_EQ(o.early_stopping, -1);
    EXPECT_EQ(o.no_repeat_ngram_size, 3u);
    EXPECT_EQ(o.bad_words_ids, (std::vector<std::vector<uint32_t>>{{5}}));
    EXPECT_EQ(o.min_length, 4u);
    EXPECT_EQ(o.min_new_tokens, 2u);
    EXPECT_EQ(o.forced_eos_id, std::optional<uint32_t>(2));
  }
  // What generate() has that vkformer does not run: refused by name.
  for (const auto& [key, value] : std::vector<std::pair<std::string, nlohmann::json>>{
           {"penalty_alpha", 0.6}, {"num_beam_groups", 2}, {"typical_p", 0.9}, {"guidance_scale", 1.5}}) {
    nlohmann::json g = base;
    g[key] = value;
    if (key == "typical_p") g["do_sample"] = true;
    c.write("generation_config.json", g.dump());
    try {
      Model::load(ctx, c.dir.string());
      ADD_FAILURE() << key << " was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("'" + key + "'"), std::string::npos) << e.what();
      EXPECT_EQ(e.kind(), ErrorKind::Unsupported) << e.what();
    }
  }
  // Inert without beams or sampling: accepted.
  nlohmann::json g = base;
  g["num_beams"] = 1;
  g["length_penalty"] = 2.0;
  g["max_length"] = 10;
  c.write("generation_config.json", g.dump());
  const auto model = Model::load(ctx, c.dir.string());
  EXPECT_EQ(GenerateOptions::defaults(model->config(), 3).max_new_tokens, 7u) << "max_length 10 counts the prompt";
  EXPECT_EQ(GenerateOptions::defaults(model->config(), 12).max_new_tokens, 1u);
  Session session(model);
  const auto out = session.generate({{5, 17, 9}}, GenerateOptions::defaults(model->config(), 3));
  EXPECT_LE(out[0].size(), 7u);
}

// Tokenizing is bounded in time whatever the file asks: a Split pattern that backtracks
// (quadratic, or exponential) is stopped with an error naming the file and the pattern;
// a long word's merges take the heap's O(n log n); decoding a long run is linear.
TEST(UntrustedFiles, TokenizingIsBoundedInTimeWhateverTheFileAsks) {
  // 2 s each as the hidden probes ask, 10 s under the sanitizers' instrumentation (the
  // bound is on the work, which stays the same: quadratic work would take minutes).
#ifdef VKF_UNDER_SANITIZER
  constexpr double kLimit = 10.0;
#else
  constexpr double kLimit = 2.0;
#endif
  using clock = std::chrono::steady_clock;
  auto seconds = [](clock::time_point t0) { return std::chrono::duration<double>(clock::now() - t0).count(); };
  Copy c(kHf / "llama" / "tokenizer_llama3");
  nlohmann::json t = c.json("tokenizer.json");
  for (const auto& [pattern, text] : std::vector<std::pair<std::string, std::string>>{
           {"\\w*\\d|.", std::string(120000, 'a')}, {"(?:a+)+b|.", std::string(114000, 'a')}}) {
    t["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = pattern;
    c.write("tokenizer.json", t.dump());
    const auto tok = Tokenizer::for_model(c.dir.string());
    const auto t0 = clock::now();
    try {
      tok->encode(text);
      ADD_FAILURE() << pattern << " ran to the end";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("tokenizer.json"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("pattern '" + pattern.substr(0, 6)), std::string::npos) << e.what();
    }
    EXPECT_LT(seconds(t0), kLimit) << pattern;
  }
  // GPT-2's own pattern and merges on a 300 KB word, and a long decode with clean-up.
  const auto gpt2 = Tokenizer::for_model((kHf / "gpt2" / "lm").string());
  auto t0 = clock::now();
  const auto ids = gpt2->encode(std::string(300000, 'e'));
  EXPECT_FALSE(ids.empty());
  EXPECT_LT(seconds(t0), kLimit) << "a 300 KB word's merges";
  const auto bart = Tokenizer::for_model((kHf / "bart").string());
  const std::vector<uint32_t> dot = bart->encode(" .");  // <s> . </s> around it
  std::vector<uint32_t> run;
  for (int i = 0; i < 1000000; ++i) run.insert(run.end(), dot.begin(), dot.end());
  t0 = clock::now();
  EXPECT_FALSE(bart->decode(run).empty());
  EXPECT_LT(seconds(t0), kLimit) << "decoding 1 M pieces that the clean-up joins";
  // What a model of N positions can read bounds the text before it is tokenized.
  EXPECT_LT(gpt2->text_bytes_for(64), 64u * 64 + 1000);
  EXPECT_GE(gpt2->text_bytes_for(64), 64u * 4);
}

// A SentencePiece model whose precompiled character map would be read out of bounds
// (it crashed libsentencepiece): refused by our validator, while Marian's real map loads.
TEST(UntrustedFiles, AMalformedPrecompiledCharsmapIsRefusedBeforeTheLibraryReadsIt) {
  Copy c(kHf / "marian");
  std::ifstream in(c.dir / "source.spm", std::ios::binary);
  const std::string good((std::istreambuf_iterator<char>(in)), {});
  EXPECT_NO_THROW(Tokenizer::for_model(c.dir.string()));  // a real map, 44,288 units
  // The map's trie overwritten with 0xFF bytes (each unit's child outside the trie), its
  // size field past the map, and a replacement without its NUL.
  const size_t map = good.find(std::string("\x00\xb4\x02\x00", 4));  // the trie's size field, 177,152 LE
  ASSERT_NE(map, std::string::npos);
  std::string broken = good;
  std::fill(broken.begin() + long(map) + 4, broken.begin() + long(map) + 4 + 1024, char(0xFF));
  c.write("source.spm", broken);
  expect_refused([&] { Tokenizer::for_model(c.dir.string()); }, {"source.spm", "precompiled character map"});
  broken = good;
  broken[map + 2] = char(0x7F);  // the size field: 8 MB
  c.write("source.spm", broken);
  expect_refused([&] { Tokenizer::for_model(c.dir.string()); }, {"source.spm", "claims a trie larger than the map"});
  c.write("source.spm", good.substr(0, good.size() / 2));  // cut inside a field
  expect_refused([&] { Tokenizer::for_model(c.dir.string()); }, {"source.spm"});
}

}  // namespace
}  // namespace vkf::test
