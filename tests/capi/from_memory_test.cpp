// Models from memory (issue 26, item 6): every family's files handed over as bytes the
// app owns load into the same model as its directory (facts, tokenizer, outputs), need
// nothing of those bytes after the call (they are poisoned and freed before generating),
// and get the same checks as files: each malformed file is refused with the status and
// the words the directory gets, only its place named differently.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

#include "capi/open_model.hpp"
#include "vkformer/vkformer.h"

namespace {

namespace fs = std::filesystem;
using vkf::capi_test::error_mentions;
const std::string kSource = VKF_SOURCE_DIR;

// A model directory's files as an app would hold them: name -> bytes.
using Files = std::map<std::string, std::string>;

Files read_dir(const std::string& dir) {
  Files files;
  for (const auto& e : fs::directory_iterator(dir)) {
    std::ifstream in(e.path(), std::ios::binary);
    std::stringstream bytes;
    bytes << in.rdbuf();
    files[e.path().filename().string()] = bytes.str();
  }
  return files;
}

std::vector<vkf_memory_file> views(const Files& files) {
  std::vector<vkf_memory_file> v;
  for (const auto& [name, bytes] : files) v.push_back({name.c_str(), bytes.data(), bytes.size()});
  return v;
}

struct Context {
  vkf_context* context = nullptr;
  Context() {
    vkf_context_options o = vkf_context_options_default();
    o.validation = 1;
    EXPECT_EQ(vkf_context_create(&o, &context), VKF_OK) << vkf_last_error();
  }
  ~Context() { vkf_context_free(context); }
};

// What a model gives: its facts, the ids of a text (with a tokenizer), 6 greedy tokens
// from a short source.
struct Outputs {
  vkf_model_info info{};
  std::vector<uint32_t> ids, generated;
};

Outputs outputs(vkf_model* model) {
  Outputs out;
  out.info.struct_size = sizeof out.info;
  EXPECT_EQ(vkf_model_info_get(model, &out.info), VKF_OK) << vkf_last_error();
  if (out.info.has_tokenizer) {
    size_t n = 0;
    out.ids.resize(64);
    EXPECT_EQ(vkf_tokenize(model, "12 March 2021, the end", out.ids.data(), out.ids.size(), &n), VKF_OK)
        << vkf_last_error();
    out.ids.resize(n);
  }
  vkf_session* session = nullptr;
  EXPECT_EQ(vkf_session_create(model, &session), VKF_OK) << vkf_last_error();
  std::vector<uint32_t> source;
  for (uint32_t i = 0; i < 5; ++i) source.push_back((3 + 7 * i) % out.info.source_vocab_size);
  vkf_generate_options o = vkf_generate_options_default();
  o.max_new_tokens = 6;
  out.generated.resize(64);
  size_t count = 0;
  EXPECT_EQ(vkf_generate(session, source.data(), source.size(), &o, out.generated.data(), out.generated.size(), &count),
            VKF_OK)
      << vkf_last_error();
  out.generated.resize(count);
  vkf_session_free(session);
  return out;
}

TEST(CApiFromMemory, EveryFamilyLoadsAsFromItsDirectoryAndKeepsNoBytes) {
  Context c;
  for (const std::string dir :
       {kSource + "/samples/dates", kSource + "/tests/hf/marian", kSource + "/tests/hf/bart", kSource + "/tests/hf/gpt2/lm",
        kSource + "/tests/hf/gpt2/sharded", kSource + "/tests/hf/llama/gqa"}) {
    SCOPED_TRACE(dir);
    vkf_model* from_dir = nullptr;
    ASSERT_EQ(vkf_model_load(c.context, dir.c_str(), VKF_PRECISION_FP32, &from_dir), VKF_OK) << vkf_last_error();
    const Outputs want = outputs(from_dir);
    vkf_model_free(from_dir);

    Files files = read_dir(dir);
    vkf_model* from_memory = nullptr;
    const auto list = views(files);
    ASSERT_EQ(vkf_model_load_from_memory(c.context, list.data(), list.size(), VKF_PRECISION_FP32, &from_memory), VKF_OK)
        << vkf_last_error();
    // The app frees its bytes once the call returns (poisoned first, in case the
    // allocator keeps them): nothing may read them afterwards (ASan would see it).
    for (auto& [name, bytes] : files) bytes.assign(bytes.size(), '\xAB');
    files.clear();
    const Outputs got = outputs(from_memory);
    EXPECT_STREQ(got.info.architecture, want.info.architecture);
    EXPECT_EQ(got.info.has_tokenizer, want.info.has_tokenizer);
    EXPECT_EQ(got.info.target_vocab_size, want.info.target_vocab_size);
    EXPECT_EQ(got.info.max_positions, want.info.max_positions);
    EXPECT_EQ(got.info.default_num_beams, want.info.default_num_beams);
    EXPECT_EQ(got.ids, want.ids);
    EXPECT_EQ(got.generated, want.generated);
    EXPECT_FALSE(got.generated.empty());
    vkf_model_free(from_memory);
  }
}

TEST(CApiFromMemory, ArgumentErrorsAreStatusesThatNameThem) {
  Context c;
  const Files files = read_dir(kSource + "/samples/dates");
  auto list = views(files);
  vkf_model* model = reinterpret_cast<vkf_model*>(1);
  EXPECT_EQ(vkf_model_load_from_memory(c.context, list.data(), list.size(), VKF_PRECISION_FP32, nullptr),
            VKF_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(vkf_model_load_from_memory(nullptr, list.data(), list.size(), VKF_PRECISION_FP32, &model),
            VKF_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(model, nullptr);  // cleared before anything else
  EXPECT_EQ(vkf_model_load_from_memory(c.context, nullptr, 3, VKF_PRECISION_FP32, &model), VKF_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(vkf_model_load_from_memory(c.context, list.data(), 0, VKF_PRECISION_FP32, &model), VKF_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(error_mentions("no files")) << vkf_last_error();
  EXPECT_EQ(vkf_model_load_from_memory(c.context, list.data(), size_t(1) << 40, VKF_PRECISION_FP32, &model),
            VKF_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(error_mentions("count")) << vkf_last_error();
  EXPECT_EQ(vkf_model_load_from_memory(c.context, list.data(), list.size(), vkf_precision(7), &model),
            VKF_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(error_mentions("precision")) << vkf_last_error();

  auto with = [&](auto change, vkf_status status, const char* words) {
    auto bad = list;
    change(bad);
    EXPECT_EQ(vkf_model_load_from_memory(c.context, bad.data(), bad.size(), VKF_PRECISION_FP32, &model), status)
        << words << ": " << vkf_last_error();
    EXPECT_TRUE(error_mentions(words)) << vkf_last_error();
    EXPECT_EQ(model, nullptr);
  };
  with([](auto& l) { l[0].name = nullptr; }, VKF_ERROR_INVALID_ARGUMENT, "files[0].name is NULL");
  with([](auto& l) { l[1].data = nullptr; }, VKF_ERROR_INVALID_ARGUMENT, "data is NULL");
  with([](auto& l) { l[0].name = "../config.json"; }, VKF_ERROR_INVALID_INPUT, "not a plain file name");
  with([](auto& l) { l[0].name = ""; }, VKF_ERROR_INVALID_INPUT, "not a plain file name");
  with([](auto& l) { l.push_back(l[0]); }, VKF_ERROR_INVALID_INPUT, "given twice");
  with([](auto& l) { std::erase_if(l, [](auto& f) { return std::string(f.name) == "config.json"; }); },
       VKF_ERROR_NOT_FOUND, "config.json is not among");
  with([](auto& l) { std::erase_if(l, [](auto& f) { return std::string(f.name) == "model.safetensors"; }); },
       VKF_ERROR_NOT_FOUND, "model.safetensors (in memory)");
  // An empty file with NULL data is a file of 0 bytes, refused as a file would be.
  with([](auto& l) { for (auto& f : l) if (std::string(f.name) == "model.safetensors") f.data = nullptr, f.size = 0; },
       VKF_ERROR_FAILED, "model.safetensors (in memory): truncated");
}

// Each malformed file, in a directory and in memory: the same status, and the same
// message once the file's place ("DIR/name" or "name (in memory)") is taken out.
TEST(CApiFromMemory, MalformedFilesGetTheChecksFilesGet) {
  Context c;
  const std::string dates = kSource + "/samples/dates", gpt2 = kSource + "/tests/hf/gpt2/lm",
                    marian = kSource + "/tests/hf/marian", sharded = kSource + "/tests/hf/gpt2/sharded";
  struct Case {
    std::string model, file, bytes;
  };
  const Files d = read_dir(dates), g = read_dir(gpt2), s = read_dir(sharded);
  const std::vector<Case> cases = {
      {dates, "config.json", "{\"architecture\": \"torch-seq2seq\", \"d_model\": 3"},     // not JSON
      {dates, "config.json", "[1, 2]"},                                                    // not an object
      {dates, "config.json", std::string(5u << 20, ' ')},                                  // too large to read
      {dates, "config.json", "{\"architecture\": \"gpt-5\"}"},                             // unknown architecture
      {dates, "model.safetensors", d.at("model.safetensors").substr(0, 1000)},             // truncated
      {dates, "model.safetensors", std::string("\xff\xff\xff\xff\xff\xff\xff\x7f", 8) + "{}"},  // hostile header length
      {dates, "vocab.json", "{\"type\": \"characters\", \"tokens\": [\"a\", \"a\"]}"},    // a token twice
      {gpt2, "merges.txt", "#version: 0.2\nonly-one-symbol\n"},                            // a bad merge
      {gpt2, "vocab.json", "{\"a\": 99999999}"},                                           // an id outside
      {gpt2, "generation_config.json", "{\"num_beams\": 0}"},                              // a bad default
      {marian, "source.spm", "not a sentencepiece model"},
      {sharded, "model.safetensors.index.json", "{\"weight_map\": {\"wte.weight\": \"../x.safetensors\"}}"},
      {sharded, "model-00002-of-00008.safetensors", s.at("model-00001-of-00008.safetensors")},  // the wrong shard
  };
  const fs::path tmp = fs::temp_directory_path() / ("vkf_capi_memory_" + std::to_string(::getpid()));
  for (const Case& k : cases) {
    SCOPED_TRACE(k.model + " " + k.file);
    Files files = read_dir(k.model);
    files[k.file] = k.bytes;
    fs::remove_all(tmp);
    fs::create_directories(tmp);
    for (const auto& [name, bytes] : files) std::ofstream(tmp / name, std::ios::binary) << bytes;
    vkf_model* model = nullptr;
    const vkf_status on_disk = vkf_model_load(c.context, tmp.c_str(), VKF_PRECISION_FP32, &model);
    std::string disk_error = vkf_last_error();
    vkf_model_free(model);
    const auto list = views(files);
    const vkf_status in_memory = vkf_model_load_from_memory(c.context, list.data(), list.size(), VKF_PRECISION_FP32, &model);
    std::string memory_error = vkf_last_error();
    vkf_model_free(model);
    EXPECT_NE(on_disk, VKF_OK) << "the case is not malformed";
    EXPECT_EQ(in_memory, on_disk) << memory_error << "\n" << disk_error;
    // The places out: "DIR/name" and "name (in memory)" both become "name"; the model's
    // own label ("model DIR" / "model in memory") becomes "model".
    auto unplace = [](std::string e, const std::string& from, const std::string& to) {
      for (size_t at; (at = e.find(from)) != std::string::npos;) e.replace(at, from.size(), to);
      return e;
    };
    disk_error = unplace(unplace(unplace(disk_error, "vkf_model_load:", "load:"), tmp.string() + "/", ""), tmp.string(), "");
    memory_error = unplace(unplace(unplace(memory_error, "vkf_model_load_from_memory:", "load:"), " (in memory)", ""),
                           "in memory", "");
    EXPECT_EQ(memory_error, disk_error);
  }
  fs::remove_all(tmp);
}

}  // namespace
