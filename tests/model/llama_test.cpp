// Llama-family directories (save_pretrained: LlamaForCausalLM with grouped-query
// attention, untied embeddings, rope_theta 500000 and linear rope scaling; a tied
// SmolLM-shaped one with one K/V head; bfloat16; MistralForCausalLM with a sliding window)
// against transformers' own outputs, made by tools/hf_references/make_llama_references.py
// (transformers 4.36.2) into tests/hf/llama/references.json.
//
// Tolerances as for GPT-2 (gpt2_test.cpp): logits ||got - ref|| / ||ref|| per prompt over
// every position, fp32 1e-4 (fp32 accumulation over 32-300 terms per output, a few 2^-24
// each, grown by two or three layers; RMSNorm, RoPE from an fp32 table and SwiGLU add a
// few roundings each), fp16 1e-2 (11-bit storage, several roundings per layer). Greedy
// continuations token for token in fp32 (with and without the repetition penalty); in
// fp16 the first token (top logits are apart by ~1 against errors of ~1e-2).
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <functional>
#include <fstream>
#include <nlohmann/json.hpp>

#include "hf_references.hpp"
#include "support/gpu_test.hpp"
#include "vkformer/model.hpp"
#include "vkformer/tokenizer.hpp"

namespace fs = std::filesystem;

namespace vkf::test {
namespace {

const fs::path kDir = fs::path(VKF_SOURCE_DIR) / "tests" / "hf" / "llama";

const nlohmann::json& references() {
  static const nlohmann::json refs = read_references(kDir / "references.json");
  return refs;
}

// Qwen2's come from transformers 4.37 (tools/hf_references/make_qwen2_references.py),
// Llama 3's rope scaling and a head width of its own (head_dim) from 4.43
// (make_llama3_references.py, make_head_dim_references.py), in the same format: the
// model's own file.
const nlohmann::json& references_of(const std::string& model) {
  static const nlohmann::json qwen2 = read_references(kDir / "qwen2_references.json");
  static const nlohmann::json llama3 = read_references(kDir / "llama3_references.json");
  static const nlohmann::json head_dim = read_references(kDir / "head_dim_references.json");
  return model == "qwen2" ? qwen2 : model == "llama3" ? llama3 : model == "head_dim" ? head_dim : references();
}


struct Case {
  const char* model;  // tests/hf/llama/<model> and its references
  DType dtype;
};

class Llama : public GpuTest, public ::testing::WithParamInterface<Case> {};

TEST_P(Llama, LogitsAndGreedyContinuationsMatchTransformers) {
  const auto [name, dtype] = GetParam();
  const bool f16 = dtype == DType::F16;
  auto model = Model::load(ctx(), (kDir / name).string(), dtype);
  const ModelConfig& c = model->config();
  EXPECT_TRUE(c.kind == ModelKind::DecoderOnly && c.norm_kind == NormKind::RMSNorm && c.gated_ffn);
  EXPECT_LT(c.kv_head_count(), c.nhead);  // every reference model groups its K/V heads
  Session session(model);
  const uint32_t n = references_of(name)["new_tokens"];
  std::vector<std::vector<uint32_t>> prompts, greedy;
  for (const auto& ref : references_of(name)["models"][name]) {
    const auto ids = ref["ids"].get<std::vector<uint32_t>>();
    SCOPED_TRACE("prompt of " + std::to_string(ids.size()) + " tokens");
    const auto logits = session.score(ids);  // [n, V]
    EXPECT_LT(relative_error(logits, ref["logits"].get<std::vector<double>>()), f16 ? 1e-2 : 1e-4);
    const auto want = ref["greedy"].get<std::vector<uint32_t>>();
    const auto got = session.generate({ids}, {.max_new_tokens = n}).at(0);
    prompts.push_back(ids);
    greedy.push_back(want);
    if (f16) {
      ASSERT_FALSE(got.empty());
      EXPECT_EQ(got[0], want[0]);
    } else {
      EXPECT_EQ(got, want);
      GenerateOptions penalised{.max_new_tokens = n, .repetition_penalty = references_of(name)["repetition_penalty"]};
      EXPECT_EQ(session.generate({ids}, penalised).at(0), ref["greedy_repetition_penalty"].get<std::vector<uint32_t>>());
    }
  }
  // All prompts in one batch, left-padded (positions shifted, padding masked): each as alone.
  if (!f16) EXPECT_EQ(session.generate(prompts, {.max_new_tokens = n}), greedy);
}

INSTANTIATE_TEST_SUITE_P(, Llama,
                         ::testing::Values(Case{"gqa", DType::F32}, Case{"gqa", DType::F16}, Case{"tied", DType::F32},
                                           Case{"tied", DType::F16}, Case{"bf16", DType::F32},
                                           Case{"bf16", DType::F16}, Case{"mistral", DType::F32},
                                           Case{"overflow", DType::F32}, Case{"qwen2", DType::F32},
                                           Case{"qwen2", DType::F16}, Case{"llama3", DType::F32},
                                           Case{"llama3", DType::F16}, Case{"head_dim", DType::F32},
                                           Case{"head_dim", DType::F16}),
                         [](const auto& info) {
                           return std::string(info.param.model) + (info.param.dtype == DType::F16 ? "_fp16" : "_fp32");
                         });

// Dispatches per Llama layer: a decode step where norms fold (GPUs, the portable
// profile, VKF_FOLD_NORMS=1) is 5 (the QKV projection with RMSNorm folded, one rotary
// dispatch for queries and keys, attention fused with its output projection and residual
// over grouped K/V heads, gate and up with RMSNorm folded and silu(gate) * up in their
// epilogue, down with its residual) with the projection fused
// (VKF_DECODE_PROJECTION=attention), 6 with it left to a GEMM (the default); unfolded
// (CPU drivers) 8. The prompt pass: 6 folded (VKF_FOLD_NORMS=1), 8 not. The outputs are
// the references' either way (the parameterised test above, run in every mode by CTest).
TEST_F(GpuTest, LlamaLayerDispatchCounts) {
  for (const char* name : {"gqa", "qwen2"}) {
    SCOPED_TRACE(name);
    Session s(Model::load(ctx(), (kDir / name).string(), DType::F32));
    s.generate({{5, 17, 9}}, {.max_new_tokens = 8, .stop_at_eos = false, .submit_budget_ms = 0});
    const GenerateStats& st = s.last_stats();
    const Ops ops(ctx(), DType::F32);
    const bool folded = ops.fold_norms_in_decode_steps();
    EXPECT_EQ(st.dispatches_per_decoder_layer, !folded ? 8.0 : ops.project_in_decode_attention() ? 5.0 : 6.0);
    EXPECT_EQ(st.dispatches_per_encoder_layer, folded && ops.fold_norms_in_encoder() ? 6.0 : 8.0);
  }
}

// fp16 overflow: a model whose residual stream passes 65504 (tests/hf/llama/overflow: its
// fp32 run matches transformers above). In fp16 storage vkformer detects it and says so,
// naming fp32 as the way out, for greedy and sampled decoding on the GPU (the choice
// carries Ops::kNonFiniteToken), for scoring, and never hands out a token from it.
TEST_F(GpuTest, LlamaFp16OverflowIsANamedErrorNeverATokenStream) {
  if (!ctx().capabilities().storage_16bit) GTEST_SKIP() << "no 16-bit storage";
  Session session(Model::load(ctx(), (kDir / "overflow").string(), DType::F16));
  const auto prompt = references()["models"]["overflow"][3]["ids"].get<std::vector<uint32_t>>();
  auto says_overflow = [&](const std::function<void()>& f) {
    try {
      f();
      ADD_FAILURE() << "no error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("overflowed fp16's range (65504); run it in fp32"), std::string::npos)
          << e.what();
    }
  };
  says_overflow([&] { session.generate({prompt}, {.max_new_tokens = 4}); });
  says_overflow([&] { session.generate({prompt}, {.max_new_tokens = 4, .temperature = 1.0f, .seed = 3}); });
  says_overflow([&] { session.score(prompt); });
}

// A copy of a reference directory with config.json edited, for the refusals.
fs::path edited(const std::string& from, const std::function<void(nlohmann::json&)>& edit) {
  const fs::path dir = fs::temp_directory_path() / ("vkf_llama_" + from + "_" + std::to_string(::getpid()) + "_" +
                                                    std::to_string(std::rand()));
  fs::create_directories(dir);
  for (const char* f : {"model.safetensors", "generation_config.json"}) fs::copy_file(kDir / from / f, dir / f);
  std::ifstream in(kDir / from / "config.json");
  nlohmann::json cfg = nlohmann::json::parse(in);
  edit(cfg);
  std::ofstream(dir / "config.json") << cfg.dump();
  return dir;
}

// Named errors: an unsupported rope_scaling type, K/V heads that do not divide the heads,
// a run past Mistral's sliding window, a prompt past max_position_embeddings, a model
// without tokenizer.json, a missing layer.
TEST_F(GpuTest, LlamaBadInputsAreNamedErrors) {
  auto fails = [&](const std::function<void()>& f, const std::string& says) {
    try {
      f();
      ADD_FAILURE() << "no error; expected one saying: " << says;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
    }
  };
  auto load = [&](const fs::path& dir) { return Model::load(ctx(), dir.string(), DType::F32); };
  const fs::path yarn = edited("gqa", [](auto& c) { c["rope_scaling"] = {{"type", "yarn"}, {"factor", 4.0}}; });
  fails([&] { load(yarn); }, "rope_scaling type 'yarn' is not supported");
  const fs::path heads = edited("gqa", [](auto& c) { c["num_key_value_heads"] = 3; });
  fails([&] { load(heads); }, "num_key_value_heads 3 does not divide num_attention_heads 4");
  const fs::path layers = edited("gqa", [](auto& c) { c["num_hidden_layers"] = 3; });
  fails([&] { load(layers); }, "num_hidden_layers");
  // Qwen2's sliding window bounds a run only when use_sliding_window turns it on.
  const fs::path windowed = edited("qwen2", [](auto& c) { c["use_sliding_window"] = true; c["sliding_window"] = 16; });
  EXPECT_EQ(load(windowed)->config().max_position, 16u);
  EXPECT_EQ(load(kDir / "qwen2")->config().max_position, 64u);
  const fs::path missing_bias = edited("qwen2", [](auto& c) { c["model_type"] = "llama"; });
  fails([&] { load(missing_bias); }, "_proj.bias' (not part of a llama");  // biases a Llama does not have
  for (const auto& d : {yarn, heads, layers, windowed, missing_bias}) fs::remove_all(d);

  Session mistral(Model::load(ctx(), (kDir / "mistral").string(), DType::F32));
  EXPECT_EQ(mistral.model().config().max_position, 32u);  // its sliding window bounds a run
  fails([&] { mistral.generate({std::vector<uint32_t>(30, 5)}, {.max_new_tokens = 4}); }, "(n_positions)");
  EXPECT_EQ(mistral.generate({std::vector<uint32_t>(29, 5)}, {.max_new_tokens = 4}).at(0).size(), 4u);
  Session gqa(Model::load(ctx(), (kDir / "gqa").string(), DType::F32));
  fails([&] { gqa.generate({std::vector<uint32_t>(60, 1)}, {.max_new_tokens = 10}); }, "(n_positions)");
  fails([&] { gqa.generate({{1, 300}}, {.max_new_tokens = 2}); }, "token id 300, outside the vocabulary of 300");
  fails([&] { Tokenizer::for_model((kDir / "gqa").string()); }, "has no tokenizer (tokenizer.model");
}

}  // namespace
}  // namespace vkf::test

namespace vkf::test {
namespace {

// tokenizer.json as the `tokenizers` library writes it: GPT-2's byte-level layout, and the
// same vocabulary in Llama 3's (its Split pattern, then byte-level, <|begin_of_text|>
// before each text): the same ids as transformers' fast tokenizers on the shared sentence
// list (accents, CJK, emoji, digits, whitespace runs, special tokens written in the text)
// and the same decoded text (special tokens skipped).
TEST(LlamaTokenizer, TokenizerJsonIdsAndTextMatchTransformers) {
  for (const char* name : {"tokenizer_bytelevel", "tokenizer_llama3", "tokenizer_qwen2"}) {
    SCOPED_TRACE(name);
    // Qwen2's (an NFC normalizer, its split pattern; sentences NFC changes) from transformers 4.37.
    const std::string n = name;
    const auto& ref = n == "tokenizer_qwen2" ? references_of("qwen2")[n] : references()["tokenizers"][n];
    const auto tok = Tokenizer::for_model((kDir / name).string());
    EXPECT_NE(tok->describe().find("tokenizer.json"), std::string::npos) << tok->describe();
    const auto sentences = ref["sentences"].get<std::vector<std::string>>();
    const auto ids = ref["ids"].get<std::vector<std::vector<uint32_t>>>();
    const auto decoded = ref["decoded"].get<std::vector<std::string>>();
    ASSERT_EQ(sentences.size(), ids.size());
    for (size_t i = 0; i < sentences.size(); ++i) {
      EXPECT_EQ(tok->encode(sentences[i]), ids[i]) << sentences[i];
      EXPECT_EQ(tok->decode(ids[i]), decoded[i]) << sentences[i];
    }
  }
}

// Llama 2's and TinyLlama's tokenizer.model (a SentencePiece BPE model with byte
// fallback, trained by tools/hf_references/make_sentencepiece_references.py), with
// tokenizer_config.json's legacy false (their hub files) and true with EOS added: the ids
// and decoded text of transformers' slow LlamaTokenizer on the sentence list and edge
// cases (marks and spaces at the start, special tokens written in the text, bytes that
// fall back to <0x..> pieces). Where the fast tokenizer converted from it differs (special
// tokens in the text, non-legacy), the slow one is the reference, as transformers names it.
// And the same model as tokenizer.json alone (byte_fallback BPE, as the converter writes
// it): the fast tokenizer's ids and text.
TEST(LlamaTokenizer, TokenizerModelIdsAndTextMatchTransformers) {
  const nlohmann::json refs = read_references(kDir / "sentencepiece_references.json");
  for (const char* name : {"tokenizer_sentencepiece", "tokenizer_sentencepiece_legacy", "tokenizer_sentencepiece_json"}) {
    SCOPED_TRACE(name);
    const auto& ref = refs["tokenizers"][name];
    const auto tok = Tokenizer::for_model((kDir / name).string());
    const bool json = std::string(name) == "tokenizer_sentencepiece_json";
    EXPECT_NE(tok->describe().find(json ? "tokenizer.json" : "tokenizer.model"), std::string::npos) << tok->describe();
    const auto sentences = ref["sentences"].get<std::vector<std::string>>();
    const auto ids = ref["ids"].get<std::vector<std::vector<uint32_t>>>();
    const auto decoded = ref["decoded"].get<std::vector<std::string>>();
    ASSERT_EQ(sentences.size(), ids.size());
    ASSERT_GE(ref["byte_fallback_ids"].size(), 10u) << "the sentences must reach the byte fallback";
    for (size_t i = 0; i < sentences.size(); ++i) {
      EXPECT_EQ(tok->encode(sentences[i]), ids[i]) << "'" << sentences[i] << "'";
      EXPECT_EQ(tok->decode(ids[i]), decoded[i]) << "'" << sentences[i] << "'";
    }
    // A long text is one word to SentencePiece-style BPE: merged from a heap (O(n log n)),
    // 400,000 characters take well under a second, not the hours a scan per merge would.
    std::string book;
    while (book.size() < 400000) book += sentences[1] + " " + sentences[4] + " ";
    const auto long_ids = tok->encode(book);
    EXPECT_GT(long_ids.size(), book.size() / 8);
    EXPECT_EQ(tok->decode(long_ids), book);
  }
}

// What would change the ids and is not read is refused by name: a normalizer, byte
// fallback without SentencePiece's layout, another pre-tokenizer or decoder with it; and a
// vocabulary larger than the model's.
TEST(LlamaTokenizer, UnsupportedTokenizerJsonIsRefusedByName) {
  std::string from = "tokenizer_llama3";
  auto with = [&](const std::function<void(nlohmann::json&)>& edit, const std::string& says) {
    const fs::path dir = fs::temp_directory_path() / ("vkf_tokjson_" + std::to_string(::getpid()) + "_" + std::to_string(std::rand()));
    fs::create_directories(dir);
    fs::copy_file(kDir / from / "config.json", dir / "config.json");
    std::ifstream in(kDir / from / "tokenizer.json");
    nlohmann::json t = nlohmann::json::parse(in);
    edit(t);
    std::ofstream(dir / "tokenizer.json") << t.dump();
    try {
      Tokenizer::for_model(dir.string());
      ADD_FAILURE() << "no error; expected one saying: " << says;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
    }
    fs::remove_all(dir);
  };
  with([](auto& t) { t["normalizer"] = {{"type", "NFKC"}}; }, "normalizer 'NFKC' is not supported");
  with([](auto& t) { t["model"]["byte_fallback"] = true; }, "with byte_fallback, the normalizer must be Prepend");
  with([](auto& t) { t["pre_tokenizer"] = {{"type", "Metaspace"}}; }, "pre_tokenizer 'Metaspace' is not supported");
  with([](auto& t) { t["model"]["type"] = "Unigram"; }, "model type 'Unigram' is not supported");
  with([](auto& t) { t["model"]["vocab"]["extra"] = 400; }, "must be an integer from 0 to");
  from = "tokenizer_sentencepiece_json";
  with([](auto& t) { t["pre_tokenizer"] = {{"type", "Metaspace"}}; }, "with byte_fallback, pre_tokenizer 'Metaspace'");
  with([](auto& t) { t["normalizer"] = nullptr; }, "with byte_fallback, the normalizer must be Prepend");
  with([](auto& t) { t["decoder"]["decoders"].erase(3); }, "with byte_fallback, the decoder must be");
  with([](auto& t) { t["model"]["unk_token"] = "<nope>"; }, "model.unk_token must be a token");
}

}  // namespace
}  // namespace vkf::test
