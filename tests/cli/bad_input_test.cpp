// The bad-input catalogue: each case is something a user or an attacker could hand
// vkformer (a model file, a config, a tokenizer, ids, lengths, options, devices, cache
// files, output paths, special files), run through the `vkformer` command, expecting a
// non-zero exit and a message that names the problem, or the documented behaviour, in
// under 10 s. Never a crash, a hang or a plausible answer.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/run_cli.hpp"
#include "sanitized.hpp"

namespace fs = std::filesystem;
using nlohmann::json;

namespace vkf::test {
namespace {

const std::string kSource = VKF_SOURCE_DIR;
const std::string kDates = kSource + "/samples/dates";
const std::string kForecast = kSource + "/samples/forecast";

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}
void spit(const std::string& path, const std::string& bytes) { std::ofstream(path, std::ios::binary) << bytes; }

// A scratch copy of a sample model that a case may break.
struct Scratch {
  std::string dir;
  explicit Scratch(const std::string& from) {
    char t[] = "/tmp/vkf-bad-XXXXXX";
    dir = ::mkdtemp(t);
    if (!from.empty()) fs::copy(from, dir, fs::copy_options::recursive | fs::copy_options::overwrite_existing);
  }
  ~Scratch() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  std::string operator/(const std::string& name) const { return dir + "/" + name; }
  void edit_config(const std::function<void(json&)>& f) const {
    json c = json::parse(slurp(*this / "config.json"));
    f(c);
    spit(*this / "config.json", c.dump());
  }
  // Rewrites model.safetensors' header (the data after it is kept as it is).
  void edit_header(const std::function<void(json&)>& f) const {
    const std::string b = slurp(*this / "model.safetensors");
    uint64_t n = 0;
    std::memcpy(&n, b.data(), 8);
    json h = json::parse(b.substr(8, n));
    f(h);
    std::string text = h.dump();
    text.append((8 - text.size() % 8) % 8, ' ');
    const uint64_t len = text.size();
    spit(*this / "model.safetensors", std::string(reinterpret_cast<const char*>(&len), 8) + text + b.substr(8 + n));
  }
  void make_fifo(const std::string& name) const {
    fs::remove(*this / name);
    ASSERT_EQ(::mkfifo((*this / name).c_str(), 0644), 0);
  }
};

struct Expect {
  int status = 1;       // 0: the documented behaviour is success
  std::string message;  // a piece of stderr that names the problem
};

void check(const std::vector<std::string>& args, const Expect& e, const CliOptions& o = {}) {
  const CliRun r = run_cli(args, o);
  std::string cmd;
  for (auto& a : args) cmd += " " + a;
  EXPECT_FALSE(r.timed_out) << "vkformer" << cmd << " was still running after " << o.limit_seconds << " s";
  EXPECT_EQ(r.status, e.status) << "vkformer" << cmd << "\nstderr: " << r.err;
  EXPECT_LT(r.status, 128) << "vkformer" << cmd << " was killed by a signal";
  EXPECT_NE(r.err.find(e.message), std::string::npos)
      << "vkformer" << cmd << "\nstderr should name: " << e.message << "\nstderr: " << r.err;
}

std::vector<std::string> translate(const Scratch& s, std::vector<std::string> more = {"3/3/98"}) {
  std::vector<std::string> a = {"translate", "--model", s.dir};
  a.insert(a.end(), more.begin(), more.end());
  return a;
}
std::vector<std::string> gen(std::vector<std::string> more) {
  std::vector<std::string> a = {"generate", "--model", kDates};
  a.insert(a.end(), more.begin(), more.end());
  return a;
}

// ---- options and ids ----

TEST(BadInput, UnknownCommandAndOption) {
  check({"transalte"}, {2, "unknown command 'transalte'"});
  check(gen({"--src-ids", "5", "--bem", "2"}), {1, "unknown option --bem"});
}

// --weights: an unknown type is refused by name; a model none of whose linear weights has
// rows of whole 32-value blocks (hidden 48) runs, with a warning that says why nothing is
// in blocks; `bench ops` has no --weights.
TEST(BadInput, WeightsInBlocks) {
  check(gen({"--src-ids", "5", "--weights", "q3_k"}),
        {1, "--weights must be one of q8_0, q4_0, q4_1, q5_0, q5_1, q4_k, q5_k, q6_k, q4_k_m, q5_k_m, not 'q3_k'"});
  // A mix is llama.cpp's rule for decoder-only models: refused by name for the date translator.
  check(gen({"--src-ids", "5", "--weights", "q4_k_m"}), {1, "q4_k_m is llama.cpp's mix for decoder-only models"});
  const std::string tied = std::string(VKF_SOURCE_DIR) + "/tests/hf/llama/tied";
  check({"generate", "--model", tied, "--ids", "5,6", "--max-new-tokens", "2", "--weights", "q8_0"},
        {0, "warning: --weights q8_0 stored no weight in blocks: the rows of every linear weight of " + tied});
  check({"bench", "ops", "--weights", "q8_0"}, {1, "--weights is for the model benchmark"});
  check({"bench", "model", "--model", kDates, "--weights", "q8_0,q9_9"}, {1, "not 'q9_9'"});
  check({"bench", "ops", "--rounds", "3"}, {1, "--rounds is for the model benchmark"});
  check({"bench", "model", "--model", kDates, "--rounds", "0"}, {1, "--rounds must be an integer from 1 to 99"});
}

TEST(BadInput, NumbersAreParsedWholeAndInRange) {
  check(gen({"--src-ids", "5", "--beam", "abc"}), {1, "--beam must be an integer from 1 to 128, got 'abc'"});
  check(gen({"--src-ids", "5", "--beam", "0"}), {1, "--beam must be an integer from 1 to 128"});
  check(gen({"--src-ids", "5", "--beam", "4294967297"}), {1, "got '4294967297'"});  // once silently 1
  check(gen({"--src-ids", "5", "--beam", "2147483649"}), {1, "--beam must be"});    // once a SIGSEGV
  check(gen({"--src-ids", "5", "--beam", "5000000000"}), {1, "--beam must be"});    // once 16 GB of host memory
  check(gen({"--src-ids", "5", "--temperature", "abc"}), {1, "--temperature must be a number from 0 to 100"});
  check(gen({"--src-ids", "5", "--temperature", "-1"}), {1, "--temperature must be"});
  check(gen({"--src-ids", "5", "--temperature", "nan"}), {1, "--temperature must be"});
  check(gen({"--src-ids", "5", "--top-p", "0"}), {1, "--top-p must be"});
  check(gen({"--src-ids", "5", "--top-p", "1.5"}), {1, "--top-p must be"});
  check(gen({"--src-ids", "5", "--max-new-tokens", "-5"}), {1, "--max-new-tokens must be an integer"});
  check(gen({"--src-ids", "5", "--max-new-tokens", "1abc"}), {1, "got '1abc'"});
  check(gen({"--src-ids", "5", "--seed", "18446744073709551616"}), {1, "--seed must be"});
  check(gen({"--src-ids", "5", "--precision", "fp64"}), {1, "--precision must be one of fp32, fp16"});
  check({"translate", "--model", kDates, "--batch", "0", "x"}, {1, "--batch must be an integer from 1 to 4096"});
  check({"translate", "--model", kDates, "--batch", "1abc", "x"}, {1, "got '1abc'"});
  check(gen({"--src-ids"}), {1, "option --src-ids needs a value"});
}

TEST(BadInput, TokenIds) {
  check(gen({"--src-ids", ""}), {1, "--src-ids is empty"});
  check(gen({"--src-ids", "5,x"}), {1, "--src-ids entry must be an integer"});
  check(gen({"--src-ids", "5,-6"}), {1, "got '-6'"});
  check(gen({"--src-ids", "5,99999"}), {1, "token id 99999, outside the source vocabulary of 54"});
  check(gen({"--src-ids", "5;;6"}), {1, "--src-ids is empty"});
}

TEST(BadInput, Lengths) {
  std::string ids = "5";
  for (int i = 0; i < 70; ++i) ids += ",5";
  check(gen({"--src-ids", ids}), {1, "71 tokens, more than the model's max_position 64"});
  check(gen({"--src-ids", "5", "--max-new-tokens", "65"}), {1, "max_position 64"});
  std::string text;
  for (int i = 0; i < 20; ++i) text += "March 3, 1998 ";  // once silently cut to a wrong date
  check({"translate", "--model", kDates, text}, {1, "has 280 tokens; the model takes at most 64"});
  check({"translate", "--model", kDates, "--truncate", text}, {0, "warning: input 1 cut from 280 to 64 tokens"});
  check({"translate", "--model", kDates, "--max-new-tokens", "5", "March 3, 1998"},
        {0, "warning: input 1 stopped at --max-new-tokens 5 before the end token"});
  check({"translate", "--model", kDates, "--max-new-tokens", "65", "x"}, {1, "more than the model's max_position 64"});
}

TEST(BadInput, EmptyInputGivesAnEmptyOutput) {
  const CliRun r = run_cli({"translate", "--model", kDates, ""});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, " -> \n");  // not a date made up from nothing
}

TEST(BadInput, Devices) {
  check(gen({"--src-ids", "5", "--device", "99"}), {1, "99"});
  check(gen({"--src-ids", "5", "--device", "no-such-gpu"}), {1, "no-such-gpu"});
}

// ---- model directories and files ----

TEST(BadInput, ModelDirectories) {
  check(gen({"--src-ids", "5"}) = {"generate", "--model", "/nonexistent/model", "--src-ids", "5"},
        {1, "model directory '/nonexistent/model' does not exist"});
  check({"translate", "--model", kDates + "/config.json", "x"}, {1, "is a file; --model takes the model's directory"});
  check({"generate", "--model", kForecast, "--src-ids", "5"}, {1, "is a patch forecaster: run it with `vkformer forecast`"});
  check({"forecast", "--model", kDates}, {1, "is a sequence-to-sequence model"});
  Scratch s(kDates);
  fs::remove(s / "config.json");
  check(translate(s), {1, "config.json: does not exist"});
}

TEST(BadInput, Configs) {
  auto with = [](const std::function<void(json&)>& f, const std::string& message) {
    Scratch s(kDates);
    s.edit_config(f);
    check(translate(s), {1, message});
  };
  with([](json& c) { c["architecture"] = "gpt"; }, "unknown architecture 'gpt'");
  with([](json& c) { c["max_position"] = 16777216; }, "'max_position' must be an integer from 1 to 65536");  // once 90 s, 8.5 GB
  with([](json& c) { c["nhead"] = 3; }, "d_model 128 is not divisible by nhead 3");
  with([](json& c) { c["layer_norm_eps"] = 5; }, "'layer_norm_eps' must be a number from 0 to 0.1");
  with([](json& c) { c["pad_id"] = "0"; }, "'pad_id' must be an integer");
  with([](json& c) { c["d_model"] = -128; }, "'d_model' must be an integer");
  with([](json& c) { c.erase("eos_id"); }, "missing field 'eos_id'");
  with([](json& c) { c["num_decoder_layers"] = 3; }, "num_decoder_layers is 3, but the checkpoint holds 2 layers");
  Scratch s(kDates);
  spit(s / "config.json", "{\"architecture\": ");
  check(translate(s), {1, "config.json: is not valid JSON"});
  spit(s / "config.json", "[1, 2]");
  check(translate(s), {1, "config.json: is not a JSON object"});
}

// Hostile sizes cost neither time nor memory before they are refused: every case runs
// under a 1 GiB heap limit (RLIMIT_DATA) and the catalogue's 10 s. Once a 1 KB config
// with a million layers took 5 GB and 11 s, and a 135 MB header of empty tensors 1.9 GB.
TEST(BadInput, HostileSizesAreRefusedInBoundedMemory) {
#ifdef VKF_UNDER_SANITIZER
  const CliOptions bounded{};  // the sanitizers' shadow memory counts against RLIMIT_DATA: time bounds them here
#else
  const CliOptions bounded{.max_data_bytes = 1ul << 30};
#endif
  {
    Scratch s(kDates);
    s.edit_config([](json& c) { c["num_encoder_layers"] = c["num_decoder_layers"] = 1000000; });
    check(translate(s), {1, "num_encoder_layers is 1000000, but the checkpoint holds 2 layers"}, bounded);
  }
  {
    Scratch s(kSource + "/tests/hf/marian");
    s.edit_config([](json& c) { c["encoder_layers"] = c["decoder_layers"] = 1000000; });
    check(translate(s), {1, "encoder_layers is 1000000, but the checkpoint holds"}, bounded);
  }
  {
    Scratch s(kForecast);
    s.edit_config([](json& c) { c["num_layers"] = 100000; });
    check({"forecast", "--model", s.dir}, {1, "num_layers is 100000, but the checkpoint holds 2 layers"}, bounded);
  }
  {
    Scratch s(kDates);  // a header of 320,000 empty tensors, just over the cap
    std::string header = "{";
    for (int i = 0; i < 320000; ++i)
      header += "\"e" + std::to_string(i) + "\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[0,0]},";
    header.back() = '}';
    const uint64_t n = header.size();
    spit(s / "model.safetensors", std::string(reinterpret_cast<const char*>(&n), 8) + header);
    check(translate(s), {1, "more than the 16777216 vkformer reads"}, bounded);
  }
  {
    Scratch s(kDates);  // 2^32 x 2^32 floats: the byte count wraps to 0
    s.edit_header([](json& h) {
      h["huge"] = {{"dtype", "F32"}, {"shape", {1ull << 32, 1ull << 32}}, {"data_offsets", {0, 0}}};
    });
    check(translate(s), {1, "tensor 'huge': its shape has more bytes than 2^64"}, bounded);
  }
  {
    Scratch s(kDates);  // a config padded far past any real one
    spit(s / "config.json", slurp(s / "config.json") + std::string(5 << 20, ' '));
    check(translate(s), {1, "bytes, more than the 4194304 such a file can be"}, bounded);
  }
}

TEST(BadInput, SafetensorsFiles) {
  {
    Scratch s(kDates);
    spit(s / "model.safetensors", "1234");
    check(translate(s), {1, "truncated: 4 bytes"});
  }
  {
    Scratch s(kDates);
    spit(s / "model.safetensors", std::string("\xff\xff\xff\x00\x00\x00\x00\x00{}", 10));
    check(translate(s), {1, "truncated: the header claims"});
  }
  {
    Scratch s(kDates);
    spit(s / "model.safetensors", std::string("\x04\x00\x00\x00\x00\x00\x00\x00{{{{", 12));
    check(translate(s), {1, "the header is not valid JSON"});
  }
  {
    Scratch s(kDates);
    s.edit_header([](json& h) {  // the bias's bytes moved into the weight's: sizes still match
      const uint64_t w = h["generator.weight"]["data_offsets"][0];
      const uint64_t n = h["generator.bias"]["data_offsets"][1].get<uint64_t>() - h["generator.bias"]["data_offsets"][0].get<uint64_t>();
      h["generator.bias"]["data_offsets"] = {w, w + n};
    });
    check(translate(s), {1, "overlap"});
  }
  {
    Scratch s(kDates);
    s.edit_header([](json& h) { h["generator.bias"]["dtype"] = "F64"; });
    check(translate(s), {1, "dtype 'F64' is not supported"});
  }
  {
    // Integers (a buffer such as BERT's position_ids) where a weight is: named. I16 is
    // the sample's fp16 size, so the shape checks pass and the loader reads it as a weight.
    Scratch s(kDates);
    s.edit_header([](json& h) { h["generator.bias"]["dtype"] = "I16"; });
    check(translate(s), {1, "tensor 'generator.bias' holds integers, which no weight is"});
  }
  {
    Scratch s(kDates);
    s.edit_header([](json& h) { h["generator.bias"]["shape"] = {55}; });
    check(translate(s), {1, "generator.bias"});
  }
  {
    Scratch s(kDates);
    s.edit_header([](json& h) { h["generator.bias"]["data_offsets"][1] = 1ull << 40; });
    check(translate(s), {1, "lies outside the file"});
  }
  {
    Scratch s(kDates);
    s.edit_header([](json& h) { h.erase("generator.bias"); });
    check(translate(s), {1, "missing tensor 'generator.bias'"});
  }
}

TEST(BadInput, SpecialFilesAreRefusedNotWaitedOn) {
  {
    Scratch s(kDates);
    s.make_fifo("model.safetensors");  // once a hang
    check(translate(s), {1, "is not a regular file"});
  }
  {
    Scratch s(kDates);
    s.make_fifo("config.json");
    check(translate(s), {1, "is a FIFO, socket or device"});
  }
  {
    Scratch s(kDates);
    fs::remove(s / "vocab.json");
    fs::create_directory(s / "vocab.json");
    check(translate(s), {1, "vocab.json: is a directory"});
  }
  {
    Scratch s(kForecast);
    s.make_fifo("series.txt");
    check({"forecast", "--model", s.dir, "--series", s / "series.txt"}, {1, "is a FIFO, socket or device"});
  }
}

TEST(BadInput, Tokenizers) {
  {
    Scratch s(kDates);
    fs::remove(s / "vocab.json");
    check(translate(s), {1, "has no vocab.json, the character vocabulary that text needs"});
  }
  {
    Scratch s(kDates);
    json v = json::parse(slurp(s / "vocab.json"));
    v["pad_id"] = "0";
    spit(s / "vocab.json", v.dump());
    check(translate(s), {1, "vocab.json"});  // the file is named, not a bare JSON-library message
  }
  {
    Scratch s(kDates);
    json v = json::parse(slurp(s / "vocab.json"));
    v["tokens"].erase(v["tokens"].size() - 1);
    spit(s / "vocab.json", v.dump());
    check(translate(s), {1, "characters (vocab.json), has 53 tokens but the model's source vocabulary has 54"});
  }
  {
    Scratch s(kDates);
    json v = json::parse(slurp(s / "vocab.json"));
    v["type"] = 1;  // found by fuzzing: the JSON library's own error escaped
    spit(s / "vocab.json", v.dump());
    check(translate(s), {1, "vocab.json: expected {\"type\": \"characters\""});
  }
}

// Every tokenizer, the character one included, refuses text that is not UTF-8 and NUL
// bytes the same way; none answers a plausible translation of what it could not read.
TEST(BadInput, EveryTokenizerRefusesBrokenTextAndNul) {
  Scratch s("");
  spit(s / "nul.txt", std::string("3/3/98\0junk\n", 12));
  spit(s / "broken.txt", "3/3/98\xff\xfe\n");
  for (const std::string model : {kDates, kSource + "/tests/hf/marian", kSource + "/tests/hf/bart"}) {
    check({"translate", "--model", model, "3/3/98\xff\xfe"}, {1, "the text is not valid UTF-8 (byte 6)"});
    check({"translate", "--model", model}, {1, "the text holds a NUL byte (byte 6)"}, {.stdin_path = s / "nul.txt"});
    check({"translate", "--model", model}, {1, "the text is not valid UTF-8 (byte 6)"}, {.stdin_path = s / "broken.txt"});
  }
}

// A character vocabulary's special ids name tokens of their own: no default can fall on
// a real character, and a vocabulary larger than the model's is refused.
TEST(BadInput, CharacterVocabularySpecialIds) {
  const json vocab = json::parse(slurp(kDates + "/vocab.json"));
  auto with = [&](const std::function<void(json&)>& edit, const Expect& e) {
    Scratch s(kDates);
    json v = vocab;
    edit(v);
    spit(s / "vocab.json", v.dump());
    check(translate(s), e);
  };
  with([](json& v) { v.erase("unk_id"); }, {0, ""});  // "<unk>" is there to take
  with([](json& v) {
    v.erase("unk_id");
    v["tokens"][3] = "\u00e9";  // id 3 is now a real character, and there is no "<unk>"
  }, {1, "no field 'unk_id' and no <unk> token"});
  with([](json& v) { v["unk_id"] = 5; }, {1, "field 'unk_id' is 5, the character ','"});
  with([](json& v) { v["tokens"][10] = "0"; }, {1, "the token '0' is listed twice"});
  with([](json& v) { v["pad_id"] = 54; }, {1, "field 'pad_id' must be a token id from 0 to 53"});
  with([](json& v) { for (int i = 0; i < 5; ++i) v["tokens"].push_back("x" + std::to_string(i)); },
       {1, "59 tokens, more than the model's vocabulary of 54"});
}

// Vocabularies far larger than the model's cost nothing before they are refused.
TEST(BadInput, HostileVocabulariesAreRefusedCheaply) {
  {
    Scratch s(kSource + "/tests/hf/marian");
    json v = json::parse(slurp(s / "vocab.json"));
    const std::string piece = v.begin().key();
    v[piece] = 16777215;  // once: a 612 MB table for a 2 KB file
    spit(s / "vocab.json", v.dump());
    check(translate(s), {1, "the id of '" + piece + "' must be an integer from 0 to 179"});
  }
  for (const char* model : {"marian", "bart"}) {
    Scratch s(kSource + "/tests/hf/" + model);
    // Ten million entries' worth of text: refused by its size, before parsing.
    std::ofstream f(s / "vocab.json", std::ios::binary);
    f << "{";
    for (int i = 0; i < 1000000; ++i) f << "\"t" << i << "\": " << i << ",";
    f << "\"end\": 0}";
    f.close();
    check(translate(s), {1, "more than the"});
  }
  {
    Scratch s(kSource + "/tests/hf/bart");
    std::ofstream f(s / "merges.txt", std::ios::binary);
    f << "#version: 0.2\n";
    for (int i = 0; i < 200000; ++i) f << "a" << i << " b\n";
    f.close();
    check(translate(s), {1, "merges.txt: is "});
  }
}

TEST(BadInput, SeriesFiles) {
  Scratch s("");
  spit(s / "bad.txt", "1.0\n1abc\n");
  check({"forecast", "--model", kForecast, "--series", s / "bad.txt"}, {1, "bad.txt line 2 must be a number"});
  spit(s / "short.txt", "1\n2\n3\n");
  check({"forecast", "--model", kForecast, "--series", s / "short.txt"}, {1, "the series has 3 values"});
}

// ---- sampling seeds ----

// Without --seed each run samples with a fresh seed, reported in --json; a given seed (0
// included) repeats its tokens, and seed 0 draws like any other (it once took the lowest
// kept token, <pad>, at every first step).
TEST(Sampling, SeedsAreFreshReportedAndRepeatable) {
  auto sample = [](std::vector<std::string> more) {
    std::vector<std::string> a = {"generate", "--model", kDates, "--src-ids", "5,17,9", "--temperature", "0.8", "--json"};
    a.insert(a.end(), more.begin(), more.end());
    const CliRun r = run_cli(a);
    EXPECT_EQ(r.status, 0) << r.err;
    return r.status == 0 ? json::parse(r.out) : json::object();
  };
  const json a = sample({}), b = sample({});
  ASSERT_TRUE(a.contains("seed") && b.contains("seed")) << a.dump();
  EXPECT_NE(a["seed"], b["seed"]) << "two runs without --seed used the same seed";
  const json again = sample({"--seed", a["seed"].dump()});
  EXPECT_EQ(again["ids"], a["ids"]) << "the reported seed does not repeat the run";
  for (int seed = 0; seed < 4; ++seed) {
    const json z = sample({"--seed", std::to_string(seed)});
    EXPECT_EQ(z["seed"], seed);
    EXPECT_EQ(sample({"--seed", std::to_string(seed)})["ids"], z["ids"]);
    ASSERT_FALSE(z["ids"][0].empty());
    EXPECT_NE(z["ids"][0][0], 0) << "seed " << seed << " drew <pad> (probability 1e-5) first";
  }
}

// ---- outputs ----

TEST(BadInput, OutputFilesAreWholeOrAbsent) {
  Scratch s("");
  const std::vector<std::string> score = {"score", "--model", kDates, "--src-ids", "5,6", "--tgt-ids", "1,7"};
  auto with_out = [&](const std::string& path) {
    auto a = score;
    a.insert(a.end(), {"--logits-out", path});
    return a;
  };
  check(with_out("/nonexistent/dir/logits.npy"), {1, "cannot write /nonexistent/dir/logits.npy"});
  // A full disk: a 64 KiB tmpfs filled to the last page (root only; RLIMIT_FSIZE cannot
  // stand in, since lavapipe's device memory is a memfd that the limit would break).
  const std::string disk = s / "disk";
  fs::create_directory(disk);
  if (::mount("tmpfs", disk.c_str(), "tmpfs", 0, "size=64k") != 0)
    GTEST_SKIP() << "cannot mount a small tmpfs to fill (not root?): " << std::strerror(errno);
  {
    std::ofstream fill(disk + "/fill", std::ios::binary);
    const std::string page(4096, 'x');
    for (int i = 0; i < 64 && fill.write(page.data(), page.size()); ++i) fill.flush();
  }
  check(with_out(disk + "/full.npy"), {1, "cannot write " + disk + "/full.npy"});
  EXPECT_FALSE(fs::exists(disk + "/full.npy"));
  for (auto& e : fs::directory_iterator(disk))
    if (e.path().filename() != "fill") ADD_FAILURE() << "left behind: " << e.path();
  ::umount2(disk.c_str(), MNT_DETACH);
  check(with_out(s / "ok.npy"), {0, ""});
  EXPECT_EQ(fs::file_size(s / "ok.npy"), 128u + 2 * 54 * 4);  // float32 logits [2, 54] after the header
}

TEST(BadInput, AFailedWriteToStdoutIsAnError) {
  check({"translate", "--model", kDates, "3/3/98"}, {1, "cannot write to standard output"}, {.stdout_path = "/dev/full"});
  check({"info"}, {1, "cannot write to standard output"}, {.stdout_path = "/dev/full"});
  // A closed standard output (`>&-`): refused at once, before a driver or cache file can
  // take descriptor 1 and receive the answers.
  check({"translate", "--model", kDates, "3/3/98"}, {1, "standard output is closed"}, {.close_stdout = true});
}

// A line over 1 MiB on standard input is named and skipped; the lines before and after
// it are answered in order (it once stopped the filter there).
TEST(BadInput, AnOverlongInputLineIsNamedAndTheOthersAnswered) {
  Scratch s("");
  spit(s / "in.txt", "3/3/98\n" + std::string((1u << 20) + 5000, 'x') + "\n25.12.1969\n");
  const CliRun r = run_cli({"translate", "--model", kDates}, {.stdin_path = s / "in.txt", .limit_seconds = 30});
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_EQ(r.out, "1998-03-03\n\n1969-12-25\n");
  EXPECT_NE(r.err.find("line 2: longer than 1 MiB"), std::string::npos) << r.err;
}

// --stop that no generated text can hold (not UTF-8) is refused, not waited for forever.
TEST(BadInput, AStopStringThatCannotMatchIsRefused) {
  check({"generate", "--model", kSource + "/tests/hf/gpt2/lm", "--ids", "5,17", "--stop", "\xC3\x28"},
        {1, "--stop could never match generated text"});
}

// ---- caches ----

TEST(BadInput, CacheFilesThatAreSpecialOrCorruptAreMisses) {
  Scratch cache("");
  setenv("VKF_CACHE_DIR", cache.dir.c_str(), 1);
  check({"translate", "--model", kDates, "3/3/98"}, {0, ""});  // fills the cache
  for (auto& e : fs::directory_iterator(cache.dir))
    if (e.path().extension() == ".bin") {  // the pipeline cache: a FIFO in its place
      fs::remove(e.path());
      ASSERT_EQ(::mkfifo(e.path().c_str(), 0644), 0);
    }
  // A SPIR-V entry with a valid header and checksum but a broken body: once every later
  // run failed with VK_ERROR_UNKNOWN until someone deleted the cache by hand.
  int poisoned = 0;
  for (auto& e : fs::directory_iterator(cache.dir + "/spirv")) {
    std::string b = slurp(e.path());
    if (b.size() < 40 + 64) continue;
    for (size_t i = 40 + 20; i < b.size(); i += 7) b[i] = char(0x5a);  // keep the SPIR-V magic, break the rest
    uint64_t h = 0xcbf29ce484222325ull;                                  // FNV-1a 64 of the payload, as the header holds
    for (size_t i = 40; i < b.size(); ++i) h = (h ^ uint8_t(b[i])) * 0x100000001b3ull;
    std::memcpy(b.data() + 32, &h, 8);
    spit(e.path(), b);
    ++poisoned;
  }
  ASSERT_GT(poisoned, 0);
  const CliRun first = run_cli({"translate", "--model", kDates, "3/3/98"});
  EXPECT_EQ(first.status, 0) << first.err;
  EXPECT_EQ(first.out, "3/3/98 -> 1998-03-03\n");
  const CliRun again = run_cli({"translate", "--model", kDates, "3/3/98"});  // the entries were replaced
  EXPECT_EQ(again.status, 0) << again.err;
  EXPECT_EQ(again.out, first.out);
  unsetenv("VKF_CACHE_DIR");
}

TEST(BadInput, BenchReports) {
  Scratch s("");
  spit(s / "r.json", "{not json");
  check({"bench", "chart", s / "r.json", "--svg", s / "c.svg"}, {1, "report " + (s / "r.json") + " is not valid JSON"});
  check({"bench", "chart", s / "missing.json", "--svg", s / "c.svg"}, {1, "missing.json: does not exist"});
  check({"bench", "nonsense"}, {1, "unknown benchmark 'nonsense'"});
  spit(s / "deep.json", std::string(100000, '[') + std::string(100000, ']'));
  check({"bench", "chart", s / "deep.json", "--svg", s / "c.svg"}, {1, "is nested more than 64 levels deep"});
  spit(s / "odd.json", "{\"runs\": [{\"device\": 7}]}");
  check({"bench", "chart", s / "odd.json", "--svg", s / "c.svg"}, {1, "is not a vkformer bench report"});
}

TEST(BadInput, EveryCommandHasHelp) {
  for (const char* c : {"info", "selftest", "generate", "score", "translate", "forecast", "tune", "bench"}) {
    const CliRun r = run_cli({c, "--help"});
    EXPECT_EQ(r.status, 0) << c << ": " << r.err;
    EXPECT_NE(r.out.find(std::string("usage: vkformer ") + c), std::string::npos) << c << ": " << r.out;
  }
}

}  // namespace
}  // namespace vkf::test

namespace vkf::test {
namespace {

// `translate` as a filter: each line is answered while standard input is still open.
TEST(TranslateFilter, AnswersEachLineAsItArrives) {
  int to_child[2], from_child[2];
  ASSERT_EQ(::pipe(to_child), 0);
  ASSERT_EQ(::pipe(from_child), 0);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(to_child[0], 0), ::dup2(from_child[1], 1);
    ::close(to_child[1]), ::close(from_child[0]);
    ::execl(VKF_CLI_PATH, VKF_CLI_PATH, "translate", "--model", kDates.c_str(), (char*)nullptr);
    ::_exit(127);
  }
  ::close(to_child[0]), ::close(from_child[1]);
  FILE* out = ::fdopen(from_child[0], "r");
  auto read_line_within = [&](int seconds) -> std::string {
    pollfd p{from_child[0], POLLIN, 0};
    if (::poll(&p, 1, seconds * 1000) <= 0) return "<no answer while stdin is open>";
    char line[256] = {};
    return std::fgets(line, sizeof line, out) ? line : "<eof>";
  };
  for (const char* in : {"3/3/98\n", "March 3, 1998\n"}) {
    ASSERT_EQ(::write(to_child[1], in, std::strlen(in)), ssize_t(std::strlen(in)));
    EXPECT_EQ(read_line_within(10), "1998-03-03\n") << "for " << in;
  }
  ::close(to_child[1]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  std::fclose(out);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

}  // namespace
}  // namespace vkf::test
