// Malformed models and inputs: each is a clear error naming what is wrong.
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "support/gpu_test.hpp"
#include "vkformer/forecaster.hpp"
#include "vkformer/model.hpp"

namespace fs = std::filesystem;

namespace vkf::test {
namespace {

class Malformed : public GpuTest {
 protected:
  void SetUp() override {
    GpuTest::SetUp();
    const char* d = std::getenv("VKF_GOLDEN_DIR");
    source_ = fs::path(d ? d : VKF_GOLDEN_DIR_DEFAULT) / "case_1";
    if (!fs::exists(source_ / "model.safetensors")) GTEST_SKIP() << "no golden model to break";
    dir_ = scratch_dir("malformed");
    fs::copy(source_, dir_, fs::copy_options::recursive | fs::copy_options::overwrite_existing);
  }
  nlohmann::json config() {
    std::ifstream f(fs::path(dir_) / "config.json");
    return nlohmann::json::parse(f);
  }
  void write_config(const nlohmann::json& j) { std::ofstream(fs::path(dir_) / "config.json") << j.dump(); }
  // Rewrites the safetensors header through `edit`, keeping the data as it was.
  void edit_header(const std::function<void(nlohmann::json&)>& edit, const std::string& dir = "") {
    const auto path = fs::path(dir.empty() ? dir_ : dir) / "model.safetensors";
    std::ifstream in(path, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), {});
    uint64_t n;
    std::memcpy(&n, bytes.data(), 8);
    auto header = nlohmann::json::parse(bytes.substr(8, n));
    edit(header);
    std::string text = header.dump();
    uint64_t m = text.size();
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(&m), 8);
    out << text << bytes.substr(8 + n);
  }
  // Loading must fail with a message containing every one of `parts`.
  void expect_load_error(std::initializer_list<const char*> parts) {
    try {
      Model::load(ctx(), dir_);
      FAIL() << "the model loaded";
    } catch (const Error& e) {
      for (auto* p : parts) EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what();
    }
  }
  fs::path source_;
  std::string dir_;
};

TEST_F(Malformed, BadJsonConfig) {
  std::ofstream(fs::path(dir_) / "config.json") << "{\"d_model\": 16,";
  expect_load_error({"config.json", "not valid JSON"});
}

TEST_F(Malformed, UnknownArchitectureAndBadFields) {
  auto j = config();
  j["architecture"] = "gpt-17";
  write_config(j);
  expect_load_error({"unknown architecture 'gpt-17'"});
  j = config();
  j["architecture"] = "torch-seq2seq";
  j.erase("nhead");
  write_config(j);
  expect_load_error({"missing field 'nhead'"});
  j["nhead"] = 7;  // does not divide d_model
  write_config(j);
  expect_load_error({"not divisible by nhead"});
}

// Decoding has only the fused attention kernel (a replayed step has no unfused form): a
// model whose heads are wider than it takes is refused when it loads, not when it runs.
TEST_F(Malformed, HeadsWiderThanTheAttentionKernelAreRefusedAtLoad) {
  auto j = config();
  j["d_model"] = 320;
  j["nhead"] = 2;
  write_config(j);
  expect_load_error({"head_dim 160", "attention kernel supports"});
}

// The forecaster's loader is as strict as seq2seq's: every config field, and exactly
// the tensors the config implies, each with its shape.
TEST_F(Malformed, ForecasterConfigAndTensorsAreChecked) {
  const std::string dir = scratch_dir("malformed_forecaster");
  const fs::path shipped = fs::path(VKF_SOURCE_DIR) / "samples" / "forecast";
  auto expect_error = [&](std::initializer_list<const char*> parts) {
    try {
      Forecaster::load(ctx(), dir);
      FAIL() << "the forecaster loaded";
    } catch (const Error& e) {
      for (auto* p : parts) EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what();
    }
  };
  auto restore = [&] {
    for (const char* f : {"config.json", "model.safetensors"})
      fs::copy(shipped / f, fs::path(dir) / f, fs::copy_options::overwrite_existing);
  };
  restore();
  ASSERT_NO_THROW(Forecaster::load(ctx(), dir));
  std::ifstream in(fs::path(dir) / "config.json");
  const auto good = nlohmann::json::parse(in);
  for (const char* field : {"activation", "norm_first", "layer_norm_eps", "num_layers"}) {
    auto j = good;
    j.erase(field);
    std::ofstream(fs::path(dir) / "config.json") << j.dump();
    expect_error({"missing field", field});
  }
  restore();
  // The same bytes, transposed.
  edit_header([](auto& h) { h["encoder.layers.0.self_attn.in_proj_weight"]["shape"] = {32, 96}; }, dir);
  expect_error({"encoder.layers.0.self_attn.in_proj_weight", "has shape [32, 96]", "the config implies [96, 32]"});
  restore();
  // An extra tensor of its own (no bytes: tensors may not share bytes, see below).
  edit_header([](auto& h) { h["encoder.layers.9.linear1.bias"] = {{"dtype", "F32"}, {"shape", {0}}, {"data_offsets", {0, 0}}}; }, dir);
  expect_error({"unexpected tensor 'encoder.layers.9.linear1.bias'"});
}

TEST_F(Malformed, MissingExtraAndMisshapenTensors) {
  edit_header([](auto& h) { h.erase("generator.bias"); });
  expect_load_error({"missing tensor 'generator.bias'"});
  fs::copy(source_ / "model.safetensors", fs::path(dir_) / "model.safetensors", fs::copy_options::overwrite_existing);
  edit_header([](auto& h) { h["decoder.extra.weight"] = {{"dtype", "F32"}, {"shape", {0}}, {"data_offsets", {0, 0}}}; });
  expect_load_error({"unexpected tensor 'decoder.extra.weight'"});
  // Two tensors sharing bytes would alias each other's weights silently.
  fs::copy(source_ / "model.safetensors", fs::path(dir_) / "model.safetensors", fs::copy_options::overwrite_existing);
  edit_header([](auto& h) { h["generator.bias"]["data_offsets"] = h["tgt_embed.weight"]["data_offsets"]; h["generator.bias"]["shape"] = h["tgt_embed.weight"]["shape"]; });
  expect_load_error({"'generator.bias'", "'tgt_embed.weight'", "overlap"});
  // A config whose vocabulary does not match the tensors.
  fs::copy(source_ / "model.safetensors", fs::path(dir_) / "model.safetensors", fs::copy_options::overwrite_existing);
  auto j = config();
  j["tgt_vocab_size"] = j["tgt_vocab_size"].get<int>() + 1;
  write_config(j);
  expect_load_error({"tgt_embed.weight", "has shape", "the config implies"});
}

TEST_F(Malformed, TruncatedAndGarbledSafetensors) {
  const auto path = fs::path(dir_) / "model.safetensors";
  const auto size = fs::file_size(path);
  fs::resize_file(path, size - 100);
  expect_load_error({"outside the file", "truncated"});
  fs::resize_file(path, 5);
  expect_load_error({"truncated"});
  std::ofstream(path, std::ios::binary | std::ios::trunc) << std::string("\x10\x00\x00\x00\x00\x00\x00\x00not json here!!!", 24);
  expect_load_error({"not valid JSON"});
  fs::remove(path);
  expect_load_error({"cannot open"});
  expect_load_error({"model.safetensors"});
}

TEST_F(Malformed, BadInputsToAGoodModel) {
  auto model = Model::load(ctx(), dir_);
  Session s(model);
  const auto& c = model->config();
  auto expect = [&](const std::function<void()>& f, const char* part) {
    try {
      f();
      FAIL() << "no error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
    }
  };
  expect([&] { s.generate({{3, c.src_vocab_size}}); }, "outside the source vocabulary");
  expect([&] { s.generate({{}}); }, "is empty");
  expect([&] { s.generate({std::vector<uint32_t>(c.max_position + 1, 3)}); }, "more than the model's max_position");
  expect([&] { s.generate({{3}}, {.max_new_tokens = c.max_position + 1}); }, "max_position");
  EXPECT_EQ(s.generate({{3}}, {.max_new_tokens = c.max_position, .stop_at_eos = false})[0].size(), c.max_position);
  expect([&] { s.score({3}, {c.bos_id, c.tgt_vocab_size}); }, "outside the target vocabulary");
  expect([&] { s.score({3}, std::vector<uint32_t>(c.max_position + 1, c.bos_id)); }, "max_position");
  // The session still works after every error.
  EXPECT_FALSE(s.generate({{3, 4}}, {.max_new_tokens = 2})[0].empty());
  try {
    Model::load(ctx(), dir_ + "/nope");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("does not exist"), std::string::npos);
  }
}

}  // namespace
}  // namespace vkf::test
