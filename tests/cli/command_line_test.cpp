// The command line refuses instead of guessing: unknown options name the nearest known
// one, `--` ends options, inert or conflicting flags are errors, one range per option in
// every command, --help from the same table as the parser, one message for an
// unsupported model whatever the command, a filter that answers every good line, and
// environment values checked like options.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/run_cli.hpp"

namespace fs = std::filesystem;
using nlohmann::json;

namespace vkf::test {
namespace {

const std::string kSource = VKF_SOURCE_DIR;
const std::string kDates = kSource + "/samples/dates";
const std::string kMarian = kSource + "/tests/hf/marian";

using Dir = TempDir;

void spit(const std::string& path, const std::string& bytes) { std::ofstream(path, std::ios::binary) << bytes; }

CliRun expect_error(const std::vector<std::string>& args, const std::string& message, const CliOptions& o = {}) {
  const CliRun r = run_cli(args, o);
  std::string cmd;
  for (auto& a : args) cmd += " " + a;
  EXPECT_EQ(r.status, 1) << "vkformer" << cmd << "\nstdout: " << r.out << "\nstderr: " << r.err;
  EXPECT_NE(r.err.find(message), std::string::npos) << "vkformer" << cmd << "\nstderr should name: " << message
                                                     << "\nstderr: " << r.err;
  return r;
}

TEST(CommandLine, UnknownOptionsNameTheNearestAndDashDashEndsOptions) {
  expect_error({"translate", "--modle", kDates, "x"}, "unknown option --modle for `vkformer translate` (did you mean --model?)");
  expect_error({"generate", "--model", kDates, "--src-ids", "5", "--bem", "2"}, "(did you mean --beam?)");
  // A short option is not text to translate.
  const CliRun b = expect_error({"translate", "--model", kDates, "-b", "4", "3/3/98"}, "unknown option -b");
  EXPECT_EQ(b.out, "");
  expect_error({"info", "stray"}, "`vkformer info` takes no argument 'stray'");
  expect_error({"translate", "--model", kDates, "--beam", "2", "--beam", "3", "x"}, "option --beam is given twice");
  expect_error({"translate", "--model", kDates, "--truncate=yes", "x"}, "option --truncate takes no value");
  // After --, text may begin with '-'.
  const CliRun dash = run_cli({"translate", "--model", kDates, "--", "-3/3/98", "--beam"});
  EXPECT_EQ(dash.status, 0) << dash.err;
  EXPECT_NE(dash.out.find("-3/3/98 -> "), std::string::npos) << dash.out;
  EXPECT_NE(dash.out.find("--beam -> "), std::string::npos) << dash.out;
}

TEST(CommandLine, InertOrConflictingFlagsAreErrors) {
  const std::vector<std::string> gen = {"generate", "--model", kDates, "--src-ids", "5,17,9"};
  auto with = [&](std::vector<std::string> more) {
    auto a = gen;
    a.insert(a.end(), more.begin(), more.end());
    return a;
  };
  expect_error(with({"--top-k", "5"}), "--top-k is a sampling option: give --temperature");
  expect_error(with({"--top-p", "0.5"}), "--top-p is a sampling option");
  expect_error(with({"--seed", "3"}), "--seed is a sampling option");
  expect_error(with({"--beam", "4", "--temperature", "0.8"}), "--temperature samples and --beam 4 searches");
  expect_error(with({"--length-penalty", "0.5"}), "--length-penalty is a beam search option: give --beam K");
  EXPECT_EQ(run_cli(with({"--temperature", "0.8", "--top-k", "5", "--top-p", "0.9", "--seed", "1"})).status, 0);
}

TEST(CommandLine, OneRangePerOptionInEveryCommand) {
  for (const char* command : {"generate", "translate"}) {
    std::vector<std::string> a = {command, "--model", kDates, "--max-new-tokens", "0"};
    if (std::string(command) == "generate") a.insert(a.end(), {"--src-ids", "5"});
    else a.push_back("3/3/98");
    expect_error(a, "--max-new-tokens must be an integer from 1 to 65536, got '0'");
  }
}

// --help comes from the parser's table: every option the command takes is described.
TEST(CommandLine, HelpDescribesEveryOption) {
  const std::map<std::string, std::vector<std::string>> want = {
      {"score", {"--model DIR", "--src-ids IDS", "--tgt-ids IDS", "--logits-out FILE", "--precision", "--json"}},
      {"translate", {"--model DIR", "--beam K", "--batch N", "--max-new-tokens N", "--truncate", "[--] [\"text\" ...]"}},
      {"forecast", {"--model DIR", "--series FILE"}},
      {"generate", {"--model DIR", "bart", "--src-ids IDS", "--temperature T", "--top-k K", "--seed S", "(1 to 128)"}},
      {"bench", {"--model DIR", "--max-size N", "(64 to 16384)", "--rounds N", "(1 to 99)"}},
      {"info", {"--model DIR", "--device N|NAME", "--no-cache"}},
  };
  for (const auto& [command, parts] : want) {
    const CliRun r = run_cli({command, "--help"});
    EXPECT_EQ(r.status, 0);
    for (const auto& p : parts) EXPECT_NE(r.out.find(p), std::string::npos) << command << " --help lacks " << p << "\n" << r.out;
  }
}

// The first hour's commands: help (the list, one command's options, an unknown one),
// version with the C ABI, tokenize both ways, score's totals without a file, and --help
// naming every family.
TEST(CommandLine, HelpVersionTokenizeAndScoreTotals) {
  const std::string gpt2 = kSource + "/tests/hf/gpt2/lm", llama = kSource + "/tests/hf/llama/with_tokenizer";
  CliRun r = run_cli({"help"});
  EXPECT_EQ(r.status, 0) << r.err;
  for (const char* c : {"tokenize", "version", "help", "generate", "exit status"})
    EXPECT_NE(r.out.find(c), std::string::npos) << c << " missing from\n" << r.out;
  r = run_cli({"help", "generate"});
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.out, run_cli({"generate", "--help"}).out);
  expect_error({"help", "genrate"}, "unknown command 'genrate'");
  r = run_cli({"version"});
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.out.find("(C ABI 7)"), std::string::npos) << r.out;
  EXPECT_EQ(run_cli({"--version"}).out, r.out);
  for (const char* command : {"generate", "score", "translate"}) {
    const std::string help = run_cli({command, "--help"}).out;
    for (const char* family : {"marian", "bart", "gpt2", "llama", "mistral", "qwen2"})
      EXPECT_NE(help.find(family), std::string::npos) << command << " --help does not name " << family;
  }
  // Text to ids and back, as the model's generate takes them.
  r = run_cli({"tokenize", "--model", llama, "Hello world", "日本"});
  ASSERT_EQ(r.status, 0) << r.err;
  std::istringstream lines(r.out);
  std::string hello, japanese;
  std::getline(lines, hello);
  std::getline(lines, japanese);
  EXPECT_EQ(hello.rfind("357,", 0), 0u) << "Llama 3's <|begin_of_text|> first: " << hello;
  r = run_cli({"tokenize", "--model", llama, "--ids", hello});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "Hello world\n");
  expect_error({"tokenize", "--model", llama, "--ids", "5,99999"}, "--ids entry 1 is 99999, outside the tokenizer's 359 tokens");
  expect_error({"tokenize", "--model", llama}, "give the text to tokenize");
  expect_error({"tokenize", "--model", kSource + "/tests/hf/llama/gqa", "x"}, "has no tokenizer");
  // score: the totals on one line, no .npy needed.
  r = run_cli({"score", "--model", gpt2, "--ids", "5,17,9,4"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("log-probability -"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("over 3 tokens"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("perplexity "), std::string::npos) << r.out;
  // info --model on a Llama (it once read past a name table) and a forecaster's pointer.
  r = run_cli({"info", "--model", llama});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("rotary, rope_theta 10000"), std::string::npos) << r.out;
  expect_error({"info", "--model", kSource + "/samples/forecast"}, "`vkformer forecast --model");
  expect_error({"info", "--precision", "fp16"}, "--precision is for --model DIR");
}

// A GGUF file: info describes it (text and JSON); score and generate run a model from one
// (tests/gguf, made by llama.cpp's converter and quantizer) as its references say; a file
// that is not a whole model, or a malformed one, is an error naming what is wrong.
TEST(CommandLine, GgufFilesAreDescribedAndRun) {
  const std::string file = kSource + "/tests/gguf/reader.gguf";
  CliRun r = run_cli({"info", "--model", file});
  ASSERT_EQ(r.status, 0) << r.err;
  for (const char* line : {"GGUF version 3", "alignment 64", "architecture", "llama", "block_count", "Q4_K ", "Q6_K "})
    EXPECT_NE(r.out.find(line), std::string::npos) << line << "\n" << r.out;
  r = run_cli({"info", "--model", file, "--json"});
  ASSERT_EQ(r.status, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["format"], "gguf");
  EXPECT_EQ(j["tensors"], 5);
  EXPECT_EQ(j["storage"][0]["type"], "Q4_K");  // most bytes first
  expect_error({"generate", "--model", file, "--ids", "1,2"}, "missing llama.embedding_length");
  expect_error({"info", "--model", file, "--weights", "q4_0"}, "describes the file");
  Dir d;
  std::string bytes = std::string(std::istreambuf_iterator<char>(std::ifstream(file, std::ios::binary).rdbuf()), {});
  spit(d / "cut.gguf", bytes.substr(0, 1000));
  expect_error({"info", "--model", d / "cut.gguf"}, "run past the file's end");
  expect_error({"generate", "--model", d / "cut.gguf", "--ids", "1"}, "run past the file's end");
  // A real model: greedy ids and logits as transformers gives them on the file's weights.
  const json refs = json::parse(std::ifstream(kSource + "/tests/gguf/references.json"));
  const json& ref = refs["models"]["llama_gqa"]["files"]["Q4_K_M"];
  const std::string model = kSource + "/tests/gguf/llama_gqa/llama_gqa.Q4_K_M.gguf";
  std::string ids;
  for (const auto& id : refs["models"]["llama_gqa"]["ids"]) ids += (ids.empty() ? "" : ",") + std::to_string(id.get<int>());
  // With cold shader caches its first run compiles the model's kernels for Q4_K and Q6_K:
  // 9.5-10.3 s on lavapipe on a quiet 2-core EPYC, past run_cli's 10 s for a hang.
  const CliOptions compiles{.limit_seconds = 60};
  r = run_cli({"generate", "--model", model, "--ids", ids, "--max-new-tokens", "8", "--json"}, compiles);
  ASSERT_EQ(r.status, 0) << r.err;
  const auto greedy = ref["greedy"].get<std::vector<uint32_t>>();
  const auto got = json::parse(r.out)["ids"][0].get<std::vector<uint32_t>>();
  ASSERT_FALSE(got.empty());
  EXPECT_EQ(got, std::vector<uint32_t>(greedy.begin(), greedy.begin() + got.size())) << "(stops at the end token)";
  r = run_cli({"score", "--model", model, "--ids", ids, "--logits-out", d / "logits.npy"}, compiles);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(fs::exists(d / "logits.npy"));
}

// A decoder-only model's text through translate takes the default length within its
// positions (it once asked for 64 new tokens after any prompt).
TEST(CommandLine, TranslateContinuesADecoderOnlyPromptWithinItsPositions) {
  const CliRun r = run_cli({"translate", "--model", kSource + "/tests/hf/llama/with_tokenizer", "--json", "The date is"});
  ASSERT_EQ(r.status, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["ids"].size(), 57u) << "65 - 8 prompt tokens";
}

TEST(CommandLine, AnUnsupportedModelGetsOneMessageFromEveryCommand) {
  Dir d;
  fs::copy(kMarian, d.path, fs::copy_options::recursive | fs::copy_options::overwrite_existing);
  json c = json::parse(std::ifstream(d / "config.json"));
  c["model_type"] = "t5";
  spit(d / "config.json", c.dump());
  const std::string message = "model_type 't5' is not supported (vkformer runs Hugging Face model_type marian, bart, gpt2, llama, mistral, qwen2, bert, roberta and distilbert)";
  expect_error({"translate", "--model", d.path, "hello"}, message);
  expect_error({"generate", "--model", d.path, "--src-ids", "5"}, message);
  expect_error({"info", "--model", d.path}, message);
}

// A Hugging Face model's generation_config.json gives generate its defaults, as it gives
// translate's: the forced EOS (id 0) ends the output, and the ids are translate's.
TEST(CommandLine, GenerateTakesAHuggingFaceModelsDefaults) {
  const CliRun t = run_cli({"translate", "--model", kMarian, "--json", "the cat"});
  ASSERT_EQ(t.status, 0) << t.err;
  const json translated = json::parse(t.out);
  // The source ids as translate's tokenizer makes them, through `info`-independent means:
  // generate on the same ids must give the same output.
  const CliRun tok = run_cli({"generate", "--model", kMarian, "--src-ids", "5,17,9,0", "--json"});
  ASSERT_EQ(tok.status, 0) << tok.err;
  const json g = json::parse(tok.out);
  const auto& ids = g["ids"][0];
  ASSERT_FALSE(ids.empty());
  EXPECT_EQ(ids.back(), 0) << "no forced EOS: generation_config.json was ignored: " << ids.dump();
  EXPECT_TRUE(g["finished"][0].get<bool>());
  const CliRun beam = run_cli({"generate", "--model", kMarian, "--src-ids", "5,17,9,0", "--beam", "4",
                               "--max-new-tokens", "23", "--json"});
  ASSERT_EQ(beam.status, 0) << beam.err;
  const json b = json::parse(beam.out);
  EXPECT_EQ(b["ids"][0].back(), 0) << b.dump();
  EXPECT_LE(b["ids"][0].size(), 23u);
  EXPECT_TRUE(translated["finished"].get<bool>());
}

// A filter answers every good line in order, names each bad one with its number, and
// fails at the end.
TEST(CommandLine, AFilterAnswersGoodLinesAndNamesBadOnes) {
  Dir d;
  spit(d / "in.txt", "1 May 2001\n3/3/98\n25.12\xff.1969\nDecember 9, 1999\nbad" + std::string(1, '\0') + "line\n");
  const CliRun r = run_cli({"translate", "--model", kDates}, {.stdin_path = d / "in.txt"});
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_EQ(r.out, "2001-05-01\n1998-03-03\n\n1999-12-09\n\n") << r.out;
  EXPECT_NE(r.err.find("line 3: tokenizer: the text is not valid UTF-8 (byte 5)"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("line 5: tokenizer: the text holds a NUL byte (byte 3)"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("2 of 5 lines could not be translated"), std::string::npos) << r.err;
  // Arguments too: the good ones are answered.
  const CliRun a = run_cli({"translate", "--model", kDates, "3/3/98", "x\xff", "1 May 2001"});
  EXPECT_EQ(a.status, 1);
  EXPECT_NE(a.out.find("3/3/98 -> 1998-03-03"), std::string::npos) << a.out;
  EXPECT_NE(a.out.find("1 May 2001 -> 2001-05-01"), std::string::npos) << a.out;
  EXPECT_NE(a.err.find("input 2: tokenizer: the text is not valid UTF-8"), std::string::npos) << a.err;
}

TEST(CommandLine, AForecastWorseThanNaiveSaysSo) {
  Dir d;
  std::string series;
  for (int i = 0; i < 60; ++i) series += "4\n";  // constant: the naive forecast is exact
  spit(d / "flat.txt", series);
  const CliRun r = run_cli({"forecast", "--model", kSource + "/samples/forecast", "--series", d / "flat.txt"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("(model worse; naive exact)"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("better"), std::string::npos) << r.out;
}

TEST(CommandLine, EnvironmentValuesAreCheckedLikeOptions) {
  setenv("VKF_LOG", "verbose", 1);
  expect_error({"translate", "--model", kDates, "3/3/98"}, "VKF_LOG must be debug, info, warning or error, not 'verbose'");
  unsetenv("VKF_LOG");
  setenv("VKF_VALIDATION", "yes", 1);
  expect_error({"translate", "--model", kDates, "3/3/98"}, "VKF_VALIDATION must be 1 (on) or 0 (off), not 'yes'");
  setenv("VKF_VALIDATION", "1", 1);  // as CTest runs every test
}

// An encoder-only model (BERT) runs under `encode` only, and `encode` runs nothing else;
// what it cannot do is named.
TEST(CommandLine, EncoderOnlyModelsRunUnderEncodeOnly) {
  const std::string bert = kSource + "/tests/hf/bert/base";
  expect_error({"generate", "--model", bert, "--ids", "5,6"}, "is an encoder-only model (it generates nothing): run it with `vkformer encode`");
  expect_error({"score", "--model", bert, "--ids", "5,6"}, "is an encoder-only model");
  expect_error({"encode", "--model", kDates, "--ids", "5,6"}, "is a sequence-to-sequence model");
  expect_error({"encode", "--model", bert}, "encode needs --ids");
  expect_error({"encode", "--model", bert, "--ids", "5,300"}, "token id 300 is outside the vocabulary of 300");
  expect_error({"encode", "--model", bert, "--ids", "5,6", "--token-types", "0,2"}, "token type 2 is outside the model's 2 types");
  expect_error({"encode", "--model", bert, "--ids", "5,6", "--logits-out", "x.npy"}, "has no head");
  expect_error({"encode", "--model", kSource + "/tests/hf/bert/mlm", "--ids", "5,6", "--pooled-out", "x.npy"}, "has no pooler");
  Dir dir;
  const std::string hidden = dir.path + "/h.npy";
  const CliRun r = run_cli({"encode", "--model", bert, "--ids", "101,7,102", "--hidden-out", hidden});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("3 tokens x 64: last hidden state and pooled output"), std::string::npos) << r.out;
  EXPECT_EQ(std::filesystem::file_size(hidden), 128u + 4u * 3 * 64);
  // A classifier names its label; a masked-LM head writes [len(ids), vocab] logits.
  const CliRun label = run_cli({"encode", "--model", kSource + "/tests/hf/bert/classifier", "--ids", "101,7,102"});
  EXPECT_NE(label.out.find("label: neutral"), std::string::npos) << label.out << label.err;  // transformers' argmax
  const std::string logits = dir.path + "/l.npy";
  EXPECT_EQ(run_cli({"encode", "--model", kSource + "/tests/hf/bert/mlm", "--ids", "101,7,102", "--logits-out", logits}).status, 0);
  EXPECT_EQ(std::filesystem::file_size(logits), 128u + 4u * 3 * 300);
}

// `vkformer embed` and `vkformer search` on the random sentence-transformers directory
// (tests/hf/bert/sentence, max_seq_length 24): texts from arguments or stdin, the cut
// said once, a search's cache written, used, and rebuilt when stale, foreign or damaged;
// bad corpora and models named.
TEST(CommandLine, EmbedAndSearchWithItsCache) {
  const std::string model = kSource + "/tests/hf/bert/sentence";
  Dir dir;
  const CliRun args = run_cli({"embed", "--model", model, "--out", dir / "e.npy", "A man is eating food.", "", "x"});
  EXPECT_EQ(args.status, 0) << args.err;
  EXPECT_NE(args.out.find("3 texts x 32: mean pooling, normalised, at most 24 tokens"), std::string::npos) << args.out;
  EXPECT_EQ(fs::file_size(dir / "e.npy"), 128u + 4u * 3 * 32);
  std::string words;
  for (int i = 0; i < 40; ++i) words += "word ";
  spit(dir / "in.txt", "first line\n" + words + "\r\nlast line without newline");
  const CliRun in = run_cli({"embed", "--model", model}, {.stdin_path = dir / "in.txt"});
  EXPECT_EQ(in.status, 0) << in.err;
  size_t rows = 0;
  for (char c : in.out) rows += c == '\n';
  EXPECT_EQ(rows, 3u) << in.out;
  EXPECT_NE(in.err.find("text 2 is longer than max_seq_length 24 tokens: cut there"), std::string::npos) << in.err;
  expect_error({"embed", "--model", model}, "no text to embed");
  expect_error({"embed", "--model", model, std::string("bad \xC3 utf8")}, "text 1: the text is not valid UTF-8");
  expect_error({"embed", "--model", kSource + "/tests/hf/bert/base", "hello"}, "has no tokenizer");
  expect_error({"embed", "--model", kDates, "hello"}, "is a sequence-to-sequence model");

  const std::string corpus = dir / "corpus.txt", cache = dir / "cache.npy";
  spit(corpus, "A man is eating food.\nThe girl is carrying a baby.\r\nA monkey is playing drums.\n");
  auto search = [&](const std::string& query, const std::string& corpus_file = "") {
    return run_cli({"search", "--model", model, "--corpus", corpus_file.empty() ? corpus : corpus_file, "--query", query,
                    "--cache", cache, "--json"});
  };
  auto state = [](const CliRun& r) {
    EXPECT_EQ(r.status, 0) << r.err;
    return json::parse(r.out)["cache"].get<std::string>();
  };
  const CliRun first = search("A monkey is playing drums.");
  EXPECT_EQ(state(first), "written");
  EXPECT_EQ(json::parse(first.out)["results"][0]["line"], 3);
  EXPECT_EQ(json::parse(first.out)["results"].size(), 3u);
  EXPECT_EQ(state(search("The girl is carrying a baby.")), "used");
  // Another corpus with the same cache: foreign, rebuilt; then damaged (cut short): rebuilt.
  spit(dir / "other.txt", "one text\nanother text\n");
  const CliRun foreign = search("text", dir / "other.txt");
  EXPECT_EQ(state(foreign), "rebuilt");
  EXPECT_NE(foreign.err.find("was made from another model, corpus or setting"), std::string::npos) << foreign.err;
  EXPECT_EQ(state(search("text")), "rebuilt");
  fs::resize_file(cache, 200);  // its data cut short
  const CliRun damaged = search("text");
  EXPECT_EQ(state(damaged), "rebuilt");
  EXPECT_NE(damaged.err.find("cannot be used"), std::string::npos) << damaged.err;
  // Hostile caches: each refused by the .npy reader with its reason, in bounded time and
  // memory, and rebuilt.
  auto npy = [](const std::string& header, const std::string& data = std::string(64, '\0'), char major = 1) {
    std::string h = header;
    h.append(64 - (10 + h.size() + 1) % 64, ' ');
    h += '\n';
    std::string f("\x93NUMPY", 6);
    f += major, f += '\0';
    f += char(h.size() & 0xFF), f += char(h.size() >> 8);
    return f + h + data;
  };
  const std::pair<std::string, std::string> hostile[] = {
      {"not a numpy file at all", "no \\x93NUMPY magic"},
      {npy("{'descr': '<f8', 'fortran_order': False, 'shape': (2, 2), }"), "dtype '<f8' is not '<f4'"},
      {npy("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }"), "Fortran order"},
      {npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2, 2), }"), "has 3 dimensions"},
      {npy("{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296), }"), "needs more data than the file's"},
      {npy("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999, 1), }"), "not a number below 10^19"},
      {npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), 'extra': 1, }"), "key 'extra'"},
      {npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }", "", 9), "format version 9"},
      {std::string("\x93NUMPY\x01\x00\xff\xff{", 11), "runs past the file"},
  };
  for (const auto& [bytes, reason] : hostile) {
    spit(cache, bytes);
    const CliRun r = search("text");
    EXPECT_EQ(state(r), "rebuilt") << reason;
    EXPECT_NE(r.err.find(reason), std::string::npos) << r.err;
  }
  EXPECT_EQ(state(search("text")), "used");
  // Bad corpora: an empty line is named, as is a missing file.
  spit(dir / "blank.txt", "fine\n\nfine again\n");
  expect_error({"search", "--model", model, "--corpus", dir / "blank.txt", "--query", "x"}, "line 2 is empty");
  expect_error({"search", "--model", model, "--corpus", dir / "missing.txt", "--query", "x"}, "missing.txt");
  expect_error({"search", "--model", model, "--corpus", corpus}, "search needs --query");
  // --pair: a cross-encoder's scores of (query, line), no cache; an embedding model has no classifier.
  const std::string cross = kSource + "/tests/hf/bert/cross_encoder";
  const CliRun pair = run_cli({"search", "--model", cross, "--corpus", corpus, "--query", "a baby", "--pair", "--json"});
  EXPECT_EQ(pair.status, 0) << pair.err;
  const json pj = json::parse(pair.out);
  EXPECT_EQ(pj["score"], "cross_encoder");
  EXPECT_EQ(pj["results"].size(), 3u);
  for (const auto& r : pj["results"]) EXPECT_TRUE(r["score"] > 0.0 && r["score"] < 1.0) << r;
  expect_error({"search", "--model", cross, "--corpus", corpus, "--query", "x", "--pair", "--cache", cache},
               "a cross-encoder (--pair) scores each pair with the query anew");
  expect_error({"search", "--model", model, "--corpus", corpus, "--query", "x", "--pair"}, "has no classifier");
  spit(dir / "bad.txt", std::string("fine\nbad \xC3 utf8\n"));
  expect_error({"search", "--model", model, "--corpus", dir / "bad.txt", "--query", "x"}, "corpus line 2: the text is not valid UTF-8");
  expect_error({"search", "--model", cross, "--corpus", dir / "bad.txt", "--query", "x", "--pair"},
               "corpus line 2: the text is not valid UTF-8");
}

// Beam search and transformers' processors for a decoder-only model from the command
// line: each output a line (the N best of each prompt, best first), the beam-only and
// processor options checked where they enter.
TEST(CommandLine, DecoderOnlyBeamsAndProcessors) {
  const std::string llama = kSource + "/tests/hf/llama/gqa";
  const CliRun beams = run_cli({"generate", "--model", llama, "--ids", "5,17,9;4,8", "--beam", "4",
                                "--num-return-sequences", "2", "--max-new-tokens", "6"});
  EXPECT_EQ(beams.status, 0) << beams.err;
  size_t lines = 0;
  for (char c : beams.out) lines += c == '\n';
  EXPECT_EQ(lines, 4u) << beams.out;
  EXPECT_NE(beams.err.find("output 3 (prompt 1) stopped at --max-new-tokens 6"), std::string::npos) << beams.err;
  const CliRun json_run = run_cli({"generate", "--model", llama, "--ids", "5,17,9", "--no-repeat-ngram-size", "1",
                                   "--bad-words-ids", "104;5,17", "--min-new-tokens", "3", "--max-new-tokens", "8", "--json"});
  ASSERT_EQ(json_run.status, 0) << json_run.err;
  const auto ids = json::parse(json_run.out)["ids"][0].get<std::vector<uint32_t>>();
  std::vector<uint32_t> seen = {5, 17, 9};
  for (uint32_t t : ids) {  // no token twice (n-grams of 1), the prompt's included; never 104
    EXPECT_EQ(std::count(seen.begin(), seen.end(), t), 0) << json_run.out;
    EXPECT_NE(t, 104u);
    seen.push_back(t);
  }
  expect_error({"generate", "--model", llama, "--ids", "5", "--num-return-sequences", "2"},
               "--num-return-sequences is a beam search option: give --beam K");
  expect_error({"generate", "--model", llama, "--ids", "5", "--beam", "2", "--num-return-sequences", "3"},
               "num_return_sequences must be from 1 to the beam width (2)");
  expect_error({"generate", "--model", llama, "--ids", "5", "--beam", "2", "--early-stopping", "maybe"},
               "--early-stopping must be true, false or never, not 'maybe'");
  expect_error({"generate", "--model", llama, "--ids", "5", "--bad-words-ids", "5,x"}, "--bad-words-ids");
  expect_error({"generate", "--model", llama, "--ids", "5", "--bad-words-ids", "400"}, "bad_words_ids holds an empty list or an id outside the vocabulary");
  expect_error({"generate", "--model", kDates, "--src-ids", "5,6", "--no-repeat-ngram-size", "2"},
               "are Hugging Face generate() settings");
}

TEST(CommandLine, BenchModelNeedsAModel) {
  expect_error({"bench", "model", "--model", "/nonexistent/model"}, "no model at /nonexistent/model");
}

}  // namespace
}  // namespace vkf::test
