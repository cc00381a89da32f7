// The GGUF reader (lib/model/formats/gguf.hpp): against llama.cpp's own Python package on
// a file it wrote (tests/gguf/reader.gguf and reader.json, made by
// tools/gguf_references/make_reader_file.py: every value type, arrays of numbers,
// strings and arrays, alignment 64, tensors of five types), from a path and from memory;
// and hostile files, each refused with an error naming what is wrong, in bounded time.
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include "gguf.hpp"
#include "gguf_hugging_face.hpp"
#include "support/gpu_test.hpp"
#include "vkformer/error.hpp"
#include "vkformer/gguf.hpp"
#include "vkformer/model.hpp"
#include "vkformer/tokenizer.hpp"

namespace fs = std::filesystem;

namespace vkf::test {
namespace {

using model::Gguf;
using model::GgufValue;
using model::GgufValueType;

const fs::path kDir = fs::path(VKF_SOURCE_DIR) / "tests" / "gguf";

std::string read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

GgufValueType type_named(const std::string& n) {
  static const std::map<std::string, GgufValueType> names = {
      {"uint8", GgufValueType::U8},     {"int8", GgufValueType::I8},    {"uint16", GgufValueType::U16},
      {"int16", GgufValueType::I16},    {"uint32", GgufValueType::U32}, {"int32", GgufValueType::I32},
      {"float32", GgufValueType::F32},  {"bool", GgufValueType::Bool},  {"string", GgufValueType::String},
      {"array", GgufValueType::Array},  {"uint64", GgufValueType::U64}, {"int64", GgufValueType::I64},
      {"float64", GgufValueType::F64}};
  return names.at(n);
}

// A scalar's value as the JSON has it (64-bit integers as decimal strings).
void expect_scalar(const GgufValue& v, const nlohmann::json& want, const std::string& key) {
  SCOPED_TRACE(key);
  switch (v.type) {
    case GgufValueType::U64: EXPECT_EQ(std::to_string(v.u), want.get<std::string>()); break;
    case GgufValueType::I64: EXPECT_EQ(std::to_string(v.i), want.get<std::string>()); break;
    case GgufValueType::F32: case GgufValueType::F64: EXPECT_EQ(v.f, want.get<double>()); break;
    case GgufValueType::Bool: EXPECT_EQ(v.u == 1, want.get<bool>()); break;
    case GgufValueType::I8: case GgufValueType::I16: case GgufValueType::I32: EXPECT_EQ(v.i, want.get<int64_t>()); break;
    default: EXPECT_EQ(v.u, want.get<uint64_t>()); break;
  }
}

void expect_as_the_package_read(const Gguf& g, const std::string& bytes) {
  const nlohmann::json want = nlohmann::json::parse(read_all(kDir / "reader.json"));
  EXPECT_EQ(g.version(), want["version"].get<uint32_t>());
  EXPECT_EQ(g.alignment(), 64u);
  EXPECT_EQ(g.metadata().size(), want["metadata"].size());
  for (const auto& [key, w] : want["metadata"].items()) {
    const GgufValue* v = g.find(key);
    ASSERT_NE(v, nullptr) << key;
    EXPECT_EQ(v->type, type_named(w["type"])) << key;
    if (v->type == GgufValueType::String) {
      EXPECT_EQ(std::string(v->s), w["value"].get<std::string>()) << key;
    } else if (v->type == GgufValueType::Array) {
      EXPECT_EQ(v->element, type_named(w["element"])) << key;
      if (v->element == GgufValueType::String) {
        ASSERT_EQ(v->count, w["value"].size()) << key;
        for (size_t k = 0; k < v->count; ++k) EXPECT_EQ(std::string(v->strings[k]), w["value"][k].get<std::string>());
      } else if (v->element == GgufValueType::Array) {
        ASSERT_EQ(v->count, 2u);  // [[1, 2], [3]]
        ASSERT_EQ(v->arrays[0].count, 2u);
        ASSERT_EQ(v->arrays[1].count, 1u);
        EXPECT_EQ(v->arrays[0].item(1).i, 2);
        EXPECT_EQ(v->arrays[1].item(0).i, 3);
      } else {
        ASSERT_EQ(v->count, w["value"].size()) << key;
        for (size_t k = 0; k < v->count; ++k) expect_scalar(v->item(k), w["value"][k], key);
      }
    } else {
      expect_scalar(*v, w["value"], key);
    }
  }
  ASSERT_EQ(g.tensors().size(), want["tensors"].size());
  const uint64_t start = want["data_start"];
  for (size_t k = 0; k < want["tensors"].size(); ++k) {
    const auto& w = want["tensors"][k];
    SCOPED_TRACE(w["name"].get<std::string>());
    EXPECT_EQ(g.tensor_order().at(k), w["name"].get<std::string>());
    const model::GgufTensor& t = g.at(w["name"]);
    EXPECT_STREQ(t.type.name, w["type"].get<std::string>().c_str());
    EXPECT_EQ(t.shape, w["shape"].get<std::vector<uint64_t>>());
    EXPECT_EQ(t.offset, w["offset"].get<uint64_t>());
    EXPECT_EQ(t.bytes, w["bytes"].get<uint64_t>());
    // The data where the package found it, byte for byte.
    EXPECT_EQ(std::memcmp(t.data, bytes.data() + start + t.offset, t.bytes), 0);
  }
  // Typed reads, and their refusals by name.
  EXPECT_EQ(g.uint_value("test.u32"), 4000000000u);
  EXPECT_EQ(g.uint_value("absent"), std::nullopt);
  EXPECT_EQ(g.string_value("general.architecture"), "llama");
  EXPECT_EQ(g.bool_value("test.bool"), true);
  EXPECT_DOUBLE_EQ(*g.float_value("test.i8"), -100.0);
  EXPECT_THROW((void)g.uint_value("test.i8"), Error);  // negative
  EXPECT_THROW((void)g.string_value("test.u8"), Error);
  EXPECT_THROW((void)g.bool_value("test.u8"), Error);
  EXPECT_THROW((void)g.float_value("general.name"), Error);
  EXPECT_THROW((void)g.array_value("test.ints", GgufValueType::String), Error);
  EXPECT_THROW((void)g.at("absent"), Error);
}

TEST(Gguf, ReadsWhatLlamaCppsPackageWroteFromAPathAndFromMemory) {
  const std::string bytes = read_all(kDir / "reader.gguf");
  ASSERT_FALSE(bytes.empty());
  {
    SCOPED_TRACE("path");
    const Gguf g((kDir / "reader.gguf").string());
    expect_as_the_package_read(g, bytes);
    EXPECT_EQ(g.file_bytes(), bytes.size());
  }
  {
    SCOPED_TRACE("memory");
    const ModelFiles files = ModelFiles::in_memory({{"model.gguf", bytes}});
    const Gguf g(files, "model.gguf");
    expect_as_the_package_read(g, bytes);
    EXPECT_EQ(g.at("output_norm.weight").data, reinterpret_cast<const uint8_t*>(bytes.data()) + 1024 + 832)
        << "read where the app's bytes are, not copied";
  }
}

// GGUF files built byte by byte, to be broken one field at a time.
struct Bytes {
  std::string b;
  Bytes& u16(uint16_t v) { return raw(&v, 2); }
  Bytes& u32(uint32_t v) { return raw(&v, 4); }
  Bytes& u64(uint64_t v) { return raw(&v, 8); }
  Bytes& str(std::string_view s) {
    u64(s.size());
    b += s;
    return *this;
  }
  Bytes& raw(const void* p, size_t n) {
    b.append(static_cast<const char*>(p), n);
    return *this;
  }
};

// A valid file: `kvs` metadata entries and `tensors` tensor infos appended by the
// callers, then padding to 32 and `data` bytes.
std::string gguf(uint64_t kv_count, const std::string& kvs, uint64_t tensor_count, const std::string& infos,
                 uint64_t data, uint32_t version = 3) {
  Bytes h;
  h.b = "GGUF";
  h.u32(version).u64(tensor_count).u64(kv_count);
  h.b += kvs + infos;
  h.b.resize((h.b.size() + 31) / 32 * 32, '\0');
  h.b.resize(h.b.size() + data, '\0');
  return h.b;
}
std::string tensor_info(std::string_view name, std::vector<uint64_t> dims, uint32_t type, uint64_t offset) {
  Bytes t;
  t.str(name).u32(uint32_t(dims.size()));
  for (uint64_t d : dims) t.u64(d);
  t.u32(type).u64(offset);
  return t.b;
}
std::string kv_u32(std::string_view key, uint32_t v) { return Bytes().str(key).u32(4).u32(v).b; }

void expect_refused(const std::string& bytes, const std::string& words) {
  SCOPED_TRACE(words);
  const auto t0 = std::chrono::steady_clock::now();
  try {
    // (ModelFiles reads a GGUF file among files in memory as it is given)
    const Gguf g(ModelFiles::in_memory({{"model.gguf", bytes}}), "model.gguf");
    ADD_FAILURE() << "accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("model.gguf"), std::string::npos) << "names the file: " << e.what();
  }
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 1.0);
}

TEST(Gguf, HostileFilesAreRefusedByNameInBoundedTime) {
  // A valid one first, so each case below fails for its own reason.
  const std::string t0 = tensor_info("w", {32, 2}, 8, 0);  // Q8_0 [2, 32]: 68 bytes
  const std::string ok = gguf(1, kv_u32("general.alignment", 32), 1, t0, 68);
  EXPECT_NO_THROW(Gguf(ModelFiles::in_memory({{"model.gguf", ok}}), "model.gguf"));

  expect_refused("", "truncated");
  expect_refused("GGML" + ok.substr(4), "not a GGUF file");
  // Cut in the version, the counts, the metadata, the tensor info; then in the padding
  // and the data (the infos whole, the tensor's bytes not).
  for (size_t n : {size_t(7), size_t(23), size_t(70)}) expect_refused(ok.substr(0, n), "truncated");
  expect_refused(ok.substr(0, 40), "1 tensors, more than the file's 40 bytes can hold");
  for (size_t n : {size_t(98), ok.size() - 1}) expect_refused(ok.substr(0, n), "run past the file's end");
  expect_refused(gguf(0, "", 0, "", 0, 1), "version 1");
  expect_refused(gguf(0, "", 0, "", 0, 4), "version 4");
  expect_refused(gguf(0, "", 0, "", 0, 0x03000000u), "big-endian");
  // Counts, lengths and sizes no file this size can hold: refused before allocating.
  expect_refused(gguf(uint64_t(1) << 40, "", 0, "", 0), "metadata entries");
  expect_refused(gguf(0, "", uint64_t(1) << 40, "", 0), "tensors, more than");
  expect_refused(gguf(1, Bytes().str("a").u32(9).u32(0).u64(uint64_t(1) << 40).b, 0, "", 64), "claims 1099511627776 elements");
  expect_refused(gguf(1, Bytes().str("a").u32(8).u64(uint64_t(1) << 60).b, 0, "", 64), "more than the 1048576 read");
  expect_refused(gguf(1, Bytes().str("a").u32(8).u64(1000).b, 0, "", 64), "truncated");
  expect_refused(gguf(1, Bytes().str("a").u32(13).b, 0, "", 64), "not one of GGUF's value types");
  {  // arrays nested past the limit
    Bytes deep;
    deep.str("a").u32(9);
    for (int k = 0; k < 6; ++k) deep.u32(9).u64(1);
    deep.u32(0).u64(0);
    expect_refused(gguf(1, deep.b, 0, "", 64), "nests arrays");
  }
  expect_refused(gguf(2, kv_u32("a", 1) + kv_u32("a", 2), 0, "", 0), "'a' appears twice");
  expect_refused(gguf(1, Bytes().str("").u32(4).u32(1).b, 0, "", 0), "empty key");
  expect_refused(gguf(1, kv_u32("general.alignment", 48), 1, t0, 68), "not a power of two");
  expect_refused(gguf(1, kv_u32("general.alignment", 0), 1, t0, 68), "not a power of two");
  expect_refused(gguf(1, Bytes().str("general.alignment").u32(10).u64(32).b, 1, t0, 68), "not a u32");
  expect_refused(gguf(1, Bytes().str("split.count").u32(2).u16(3).b, 1, t0, 68), "split across several files");
  // Tensor infos.
  expect_refused(gguf(0, "", 1, tensor_info("w", {32, 2}, 8, 64), 68), "run past the file's end");
  expect_refused(gguf(0, "", 1, tensor_info("w", {32, 2}, 8, uint64_t(-32)), 68), "run past the file's end");
  expect_refused(gguf(0, "", 2, t0 + tensor_info("v", {32, 1}, 8, 32), 68), "overlap");
  expect_refused(gguf(0, "", 2, t0 + tensor_info("w", {32, 1}, 8, 96), 200), "'w' appears twice");
  expect_refused(gguf(0, "", 1, tensor_info("w", {32, 2}, 8, 16), 100), "not a multiple of the alignment");
  expect_refused(gguf(0, "", 1, tensor_info("w", {uint64_t(1) << 32, uint64_t(1) << 32, 32}, 0, 0), 64),
                 "overflows 64 bits");
  expect_refused(gguf(0, "", 1, tensor_info("w", {32, 2}, 4, 0), 68), "type id 4 is not one of ggml's");
  expect_refused(gguf(0, "", 1, tensor_info("w", {32, 2}, 1000, 0), 68), "type id 1000");
  expect_refused(gguf(0, "", 1, tensor_info("w", {33, 2}, 8, 0), 68), "not whole Q8_0 blocks");
  expect_refused(gguf(0, "", 1, tensor_info("w", {32, 0}, 8, 0), 68), "a dimension of 0");
  expect_refused(gguf(0, "", 1, tensor_info("w", {1, 1, 1, 1, 1}, 0, 0), 68), "5 dimensions");
  expect_refused(gguf(0, "", 1, tensor_info(std::string(65, 'n'), {32}, 0, 0), 128), "more than the 64 read");
  expect_refused(gguf(0, "", 1, tensor_info("", {32}, 0, 0), 128), "empty name");
}

// The metadata as config.json: the hyperparameters under transformers' names, the end
// of a sequence then the end of a turn as Llama 3 lists eos_token_id, a tie where there is
// no output.weight; what vkformer does not run refused by name.
TEST(Gguf, MetadataReadsAsTransformersConfig) {
  auto u32 = [](std::string_view key, uint32_t v) { return kv_u32(key, v); };
  const std::string kvs = Bytes().str("general.architecture").u32(8).str("llama").b + u32("llama.embedding_length", 64) +
                          u32("llama.feed_forward_length", 96) + u32("llama.block_count", 2) +
                          u32("llama.attention.head_count", 4) + u32("llama.attention.head_count_kv", 2) +
                          u32("llama.context_length", 128) + u32("llama.vocab_size", 50) +
                          u32("tokenizer.ggml.eos_token_id", 2) + u32("tokenizer.ggml.eot_token_id", 7);
  const std::string bytes = gguf(10, kvs, 0, "", 0);  // (borrowed: alive as long as the reader)
  const Gguf g(ModelFiles::in_memory({{"m.gguf", bytes}}), "m.gguf");
  const nlohmann::json c = nlohmann::json::parse(model::gguf_hugging_face_config(g));
  EXPECT_EQ(c["model_type"], "llama");
  EXPECT_EQ(c["hidden_size"], 64);
  EXPECT_EQ(c["intermediate_size"], 96);
  EXPECT_EQ(c["num_key_value_heads"], 2);
  EXPECT_EQ(c["vocab_size"], 50);
  EXPECT_EQ(c["tie_word_embeddings"], true);
  EXPECT_EQ(c["eos_token_id"], nlohmann::json::array({2, 7}));
  const std::string scaled = kvs + Bytes().str("llama.rope.scaling.type").u32(8).str("yarn").b;
  try {
    (void)model::gguf_hugging_face_config(Gguf(ModelFiles::in_memory({{"m.gguf", gguf(11, scaled, 0, "", 0)}}), "m.gguf"));
    ADD_FAILURE() << "yarn accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("rope.scaling.type 'yarn'"), std::string::npos) << e.what();
  }
  // A head width of its own (attention.key_length, as Mistral NeMo's): config.json's
  // head_dim; values of another width, or a rotary width that is not the head's, refused.
  const std::string heads = kvs + u32("llama.attention.key_length", 24) + u32("llama.attention.value_length", 24) +
                            u32("llama.rope.dimension_count", 24);
  EXPECT_EQ(nlohmann::json::parse(model::gguf_hugging_face_config(
                Gguf(ModelFiles::in_memory({{"m.gguf", gguf(13, heads, 0, "", 0)}}), "m.gguf")))["head_dim"],
            24);
  auto refused = [&](const std::string& more, uint64_t n, const std::string& words) {
    SCOPED_TRACE(words);
    try {
      (void)model::gguf_hugging_face_config(Gguf(ModelFiles::in_memory({{"m.gguf", gguf(n, kvs + more, 0, "", 0)}}), "m.gguf"));
      ADD_FAILURE() << "accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
    }
  };
  refused(u32("llama.attention.key_length", 24) + u32("llama.attention.value_length", 32), 12,
          "attention.value_length 32 differs from llama.attention.key_length 24");
  refused(u32("llama.attention.key_length", 24) + u32("llama.rope.dimension_count", 16), 12,
          "rope.dimension_count 16 is not the head size 24");
}

// A tokenizer's arrays that disagree, or a kind vkformer does not read: refused by name
// when the tokenizer is read (the model itself still loads and takes ids).
TEST(Gguf, TokenizerArraysThatDisagreeAreRefusedByName) {
  auto u32 = [](std::string_view key, uint32_t v) { return kv_u32(key, v); };
  const std::string model = Bytes().str("general.architecture").u32(8).str("llama").b + u32("llama.embedding_length", 64) +
                            u32("llama.feed_forward_length", 64) + u32("llama.block_count", 1) +
                            u32("llama.attention.head_count", 2) + u32("llama.context_length", 16);
  const std::string tokens = Bytes().str("tokenizer.ggml.tokens").u32(9).u32(8).u64(3).str("<unk>").str("<s>").str("</s>").b;
  const std::string scores = Bytes().str("tokenizer.ggml.scores").u32(9).u32(6).u64(2).u32(0).u32(0).b;
  auto refused = [&](const std::string& kvs, uint64_t n, const std::string& words) {
    SCOPED_TRACE(words);
    try {
      (void)Tokenizer::for_model(ModelFiles::in_memory({{"m.gguf", gguf(n, kvs, 0, "", 0)}}));
      ADD_FAILURE() << "accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
    }
  };
  const std::string spm = Bytes().str("tokenizer.ggml.model").u32(8).str("llama").b;
  refused(model + spm + tokens + scores, 9, "tokenizer.ggml.scores has 2 entries, tokens 3");
  refused(model + Bytes().str("tokenizer.ggml.model").u32(8).str("rwkv").b + tokens, 8, "'rwkv' is not a tokenizer");
  refused(model + Bytes().str("tokenizer.ggml.model").u32(8).str("gpt2").b + tokens, 8, "needs tokenizer.ggml.tokens and merges");
}

TEST(Gguf, FilesThatAreNotRegularAreRefused) {
  EXPECT_THROW(Gguf("/nonexistent/model.gguf"), Error);
  EXPECT_THROW(Gguf(kDir.string()), Error);  // a directory
  const fs::path empty = fs::temp_directory_path() / "vkf_empty.gguf";
  std::ofstream(empty).close();
  try {
    Gguf g(empty.string());
    ADD_FAILURE() << "an empty file accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("is empty"), std::string::npos) << e.what();
  }
  fs::remove(empty);
}

// A GGUF file that is not a whole model, or of an architecture vkformer does not run,
// fails to load with an error naming what is missing or refused, from a path and from
// memory; describe_gguf summarises any well-formed file.
class GgufModel : public GpuTest {};

TEST_F(GgufModel, WhatIsNotAModelIsRefusedByNameAndDescribingItWorks) {
  const std::string file = (kDir / "reader.gguf").string(), bytes = read_all(file);
  for (int memory = 0; memory < 2; ++memory) {
    try {
      (void)Model::load(ctx(), memory ? ModelFiles::in_memory({{"model.gguf", bytes}}) : ModelFiles(file));
      ADD_FAILURE() << "a GGUF file without a model's metadata loaded";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("missing llama.embedding_length"), std::string::npos) << e.what();
    }
  }
  const std::string falcon = gguf(1, Bytes().str("general.architecture").u32(8).str("falcon").b, 0, "", 0);
  try {
    (void)Model::load(ctx(), ModelFiles::in_memory({{"model.gguf", falcon}}));
    ADD_FAILURE() << "a falcon GGUF loaded";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Unsupported) << e.what();
    EXPECT_NE(std::string(e.what()).find("architecture 'falcon' is not one vkformer runs"), std::string::npos) << e.what();
  }
  EXPECT_THROW(ModelFiles::in_memory({{"a.gguf", falcon}, {"b.gguf", falcon}}), Error);  // which one?
  EXPECT_TRUE(is_gguf_file(file));
  EXPECT_FALSE(is_gguf_file((kDir / "reader.json").string()));
  EXPECT_FALSE(is_gguf_file(kDir.string()));
  const GgufSummary s = describe_gguf(file);
  EXPECT_EQ(s.architecture, "llama");
  EXPECT_EQ(s.tensors, 5u);
  EXPECT_EQ(s.tokenizer, "none");
  ASSERT_EQ(s.hyperparameters.size(), 1u);
  EXPECT_EQ(s.hyperparameters[0], (std::pair<std::string, std::string>{"block_count", "2"}));
  uint64_t bytes_in_tensors = 0;
  for (const auto& st : s.storage) bytes_in_tensors += st.bytes;
  EXPECT_EQ(bytes_in_tensors, 204u + 576 + 68 + 30 + 210);
}

}  // namespace
}  // namespace vkf::test
