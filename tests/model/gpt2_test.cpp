// GPT-2 directories (save_pretrained: GPT2LMHeadModel with its "transformer." prefix and
// lm_head tied, GPT2Model without either, shards, bfloat16) against transformers' own
// outputs, made by tools/hf_references/make_gpt2_references.py (transformers 4.36.2)
// into tests/hf/gpt2/references.json.
//
// Logits tolerance, ||got - ref|| / ||ref|| per prompt over every position: fp32 1e-4
// (fp32 accumulation over 48-300 terms per output, a few 2^-24 each, grown by two
// layers), fp16 1e-2 (weights and activations stored to 11 bits: 2^-11 per rounding,
// several roundings per layer). Greedy continuations match transformers' generate()
// token for token in fp32; in fp16 the first tokens too (the references' top logits are
// apart by ~1, against fp16 errors of ~1e-2), and with transformers' repetition penalty
// (fp32).
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "hf_references.hpp"
#include "support/gpu_test.hpp"
#include "vkformer/model.hpp"
#include "vkformer/tokenizer.hpp"

namespace fs = std::filesystem;

namespace vkf::test {
namespace {

const fs::path kDir = fs::path(VKF_SOURCE_DIR) / "tests" / "hf" / "gpt2";

const nlohmann::json& references() {
  static const nlohmann::json refs = read_references(kDir / "references.json");
  return refs;
}


struct Case {
  const char* model;  // tests/hf/gpt2/<model> and its references
  DType dtype;
};

class Gpt2 : public GpuTest, public ::testing::WithParamInterface<Case> {};

TEST_P(Gpt2, LogitsAndGreedyContinuationsMatchTransformers) {
  const auto [name, dtype] = GetParam();
  const bool f16 = dtype == DType::F16;
  auto model = Model::load(ctx(), (kDir / name).string(), dtype);
  EXPECT_TRUE(model->config().kind == ModelKind::DecoderOnly);
  Session session(model);
  const uint32_t n = references()["new_tokens"];
  for (const auto& ref : references()["models"][name]) {
    const auto ids = ref["ids"].get<std::vector<uint32_t>>();
    SCOPED_TRACE("prompt of " + std::to_string(ids.size()) + " tokens");
    const auto logits = session.score(ids);  // [n, V]
    EXPECT_LT(relative_error(logits, ref["logits"].get<std::vector<double>>()), f16 ? 1e-2 : 1e-4);
    const auto want = ref["greedy"].get<std::vector<uint32_t>>();
    const auto got = session.generate({ids}, {.max_new_tokens = n}).at(0);
    if (f16) {
      ASSERT_FALSE(got.empty());
      EXPECT_EQ(got[0], want[0]);
    } else {
      EXPECT_EQ(got, want);
      // transformers' repetition penalty (the prompt's tokens and the generated ones), on the GPU.
      GenerateOptions penalised{.max_new_tokens = n, .repetition_penalty = references()["repetition_penalty"]};
      EXPECT_EQ(session.generate({ids}, penalised).at(0), ref["greedy_repetition_penalty"].get<std::vector<uint32_t>>());
    }
  }
}

INSTANTIATE_TEST_SUITE_P(, Gpt2,
                         ::testing::Values(Case{"lm", DType::F32}, Case{"lm", DType::F16}, Case{"base", DType::F32},
                                           Case{"sharded", DType::F32}, Case{"bf16", DType::F32},
                                           Case{"bf16", DType::F16}, Case{"eos", DType::F32}),
                         [](const auto& info) {
                           return std::string(info.param.model) + (info.param.dtype == DType::F16 ? "_fp16" : "_fp32");
                         });

// Several prompts in one call, one batch left-padded to the longest (3, 1, 6 and 20
// tokens): each continued as transformers continues it alone, greedy and with the
// repetition penalty, in both orders (the longest first and last); with fewer new tokens
// too (a shorter cache); sampled, reproducible per seed.
TEST_F(GpuTest, Gpt2SeveralPromptsGiveEachItsOwnContinuation) {
  auto model = Model::load(ctx(), (kDir / "lm").string(), DType::F32);
  Session session(model);
  const auto& refs = references()["models"]["lm"];
  const uint32_t n = references()["new_tokens"];
  std::vector<std::vector<uint32_t>> prompts;
  std::vector<std::vector<uint32_t>> greedy, penalised;
  for (const auto& r : refs) {
    prompts.push_back(r["ids"].get<std::vector<uint32_t>>());
    greedy.push_back(r["greedy"].get<std::vector<uint32_t>>());
    penalised.push_back(r["greedy_repetition_penalty"].get<std::vector<uint32_t>>());
  }
  for (bool reversed : {false, true}) {
    SCOPED_TRACE(reversed ? "reversed" : "as listed");
    auto p = prompts, g = greedy, rp = penalised;
    if (reversed) std::reverse(p.begin(), p.end()), std::reverse(g.begin(), g.end()), std::reverse(rp.begin(), rp.end());
    EXPECT_EQ(session.generate(p, {.max_new_tokens = n}), g);
    EXPECT_EQ(session.generate(p, {.max_new_tokens = n, .repetition_penalty = references()["repetition_penalty"]}), rp);
    const auto three = session.generate(p, {.max_new_tokens = 3});
    for (size_t i = 0; i < p.size(); ++i) EXPECT_EQ(three[i], std::vector<uint32_t>(g[i].begin(), g[i].begin() + 3)) << i;
  }
  GenerateOptions sampled{.max_new_tokens = n, .temperature = 0.8f, .seed = 99};
  const auto a = session.generate(prompts, sampled);
  EXPECT_EQ(session.generate(prompts, sampled), a);
  for (const auto& out : a) EXPECT_EQ(out.size(), size_t(n));
}

// Named errors: a prompt past n_positions (64), an id outside the vocabulary (357), an
// empty prompt, more outputs than beams, sampling within a beam, the encoder-decoder
// scoring call.
TEST_F(GpuTest, Gpt2BadInputsAreNamedErrors) {
  auto model = Model::load(ctx(), (kDir / "lm").string(), DType::F32);
  Session session(model);
  auto fails = [&](const std::function<void()>& f, const std::string& says) {
    try {
      f();
      ADD_FAILURE() << "no error; expected one saying: " << says;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
    }
  };
  fails([&] { session.generate({std::vector<uint32_t>(60, 1)}, {.max_new_tokens = 10}); }, "(n_positions)");
  fails([&] { session.score(std::vector<uint32_t>(65, 1)); }, "more than the model's 64 (n_positions)");
  fails([&] { session.generate({{1, 357}}, {.max_new_tokens = 2}); }, "token id 357, outside the vocabulary of 357");
  fails([&] { session.generate({{}}, {.max_new_tokens = 2}); }, "prompt 0 is empty");
  fails([&] { session.generate({{1, 2}}, {.max_new_tokens = 2, .beam = 2, .num_return_sequences = 3}); },
        "num_return_sequences must be from 1 to the beam width (2)");
  fails([&] { session.generate({{1, 2}}, {.max_new_tokens = 2, .beam = 2, .temperature = 0.7f}); },
        "does not sample within a beam");
  fails([&] { session.score({1, 2}, {1, 2}); }, "is decoder-only");
  // The longest prompt that fits: 60 tokens and 5 new ones use 64 positions.
  EXPECT_EQ(session.generate({std::vector<uint32_t>(60, 1)}, {.max_new_tokens = 5}).at(0).size(), 5u);
}

}  // namespace
}  // namespace vkf::test

namespace vkf::test {
namespace {

// GPT2Tokenizer's files as save_pretrained writes them: the same ids as transformers'
// slow and fast tokenizers on the shared sentence list (accents, CJK, emoji, digits,
// whitespace runs, <|endoftext|> written in the text), no BOS or EOS added, and the same
// decoded text, of those ids and of the model's greedy continuations.
TEST(Gpt2Tokenizer, IdsAndTextMatchTransformers) {
  const auto& ref = references()["tokenizer"];
  const auto tok = Tokenizer::for_model((kDir / "lm").string());
  const auto sentences = ref["sentences"].get<std::vector<std::string>>();
  const auto ids = ref["ids"].get<std::vector<std::vector<uint32_t>>>();
  const auto decoded = ref["decoded"].get<std::vector<std::string>>();
  ASSERT_EQ(sentences.size(), ids.size());
  for (size_t i = 0; i < sentences.size(); ++i) {
    EXPECT_EQ(tok->encode(sentences[i]), ids[i]) << sentences[i];
    EXPECT_EQ(tok->decode(ids[i]), decoded[i]) << sentences[i];
  }
  const auto& lm = references()["models"]["lm"];
  const auto greedy_text = ref["greedy_text"].get<std::vector<std::string>>();
  for (size_t i = 0; i < lm.size(); ++i) EXPECT_EQ(tok->decode(lm[i]["greedy"].get<std::vector<uint32_t>>()), greedy_text[i]);
}


// Streaming: TextStream's pieces, pushed a token at a time, are whole UTF-8 characters
// and add up to decode() of every id (on the sentence list: CJK and emoji split across
// byte-level tokens, spaces before punctuation); Session::generate's per-token callback
// sees every token in order.
TEST(Gpt2Tokenizer, StreamedTextIsWholeCharactersAndAddsUpToTheDecodedText) {
  const auto& ref = references()["tokenizer"];
  const auto tok = Tokenizer::for_model((kDir / "lm").string());
  for (const auto& ids : ref["ids"].get<std::vector<std::vector<uint32_t>>>()) {
    TextStream stream(*tok);
    std::string all;
    for (uint32_t id : ids) {
      const std::string piece = stream.push(id);
      EXPECT_EQ(piece.find("\xEF\xBF\xBD"), std::string::npos) << "a broken character was given out";
      all += piece;
    }
    all += stream.finish();
    EXPECT_EQ(all, tok->decode(ids));
  }
}

TEST_F(GpuTest, Gpt2PerTokenCallbackSeesEveryTokenInOrder) {
  auto model = Model::load(ctx(), (kDir / "lm").string(), DType::F32);
  Session session(model);
  std::vector<std::vector<uint32_t>> seen(2);
  GenerateOptions o{.max_new_tokens = 9};
  o.on_token = [&](size_t output, uint32_t token) { seen.at(output).push_back(token); };
  const auto out = session.generate({{5, 17, 9}, {42}}, o);
  EXPECT_EQ(seen, out);
}

// The encoder-decoders' host-side processors take the same repetition penalty: BART under
// its generation settings (forced BOS and EOS, min_length, no_repeat_ngram_size), greedy
// and beam search, against transformers' generate(repetition_penalty=...).
TEST_F(GpuTest, BartRepetitionPenaltyMatchesTransformers) {
  const auto& ref = references()["bart_repetition_penalty"];
  auto model = Model::load(ctx(), (kDir.parent_path() / "bart").string(), DType::F32);
  Session session(model);
  const auto sources = ref["sources"].get<std::vector<std::vector<uint32_t>>>();
  for (uint32_t beams : {1u, 4u}) {
    GenerateOptions o = GenerateOptions::defaults(model->config());
    o.max_new_tokens = ref["max_new_tokens"];
    o.beam = beams;
    o.repetition_penalty = references()["repetition_penalty"];
    const auto want = ref["beams_" + std::to_string(beams)].get<std::vector<std::vector<uint32_t>>>();
    for (size_t i = 0; i < sources.size(); ++i) EXPECT_EQ(session.generate({sources[i]}, o).at(0), want[i]) << beams << " beams";
  }
}

// Outputs end at any of several EOS ids (kept, as EOS is) or where a stop test says so:
// transformers' greedy continuation cut at the first such token.
TEST_F(GpuTest, Gpt2EndsAtAnyOfSeveralEosIdsOrAStopTest) {
  auto model = Model::load(ctx(), (kDir / "lm").string(), DType::F32);
  Session session(model);
  const auto& ref = references()["models"]["lm"][3];
  const auto ids = ref["ids"].get<std::vector<uint32_t>>();
  const auto full = ref["greedy"].get<std::vector<uint32_t>>();
  const uint32_t n = references()["new_tokens"];
  auto cut_at = [&](size_t k) { return std::vector<uint32_t>(full.begin(), full.begin() + long(k) + 1); };
  const size_t k = 3;
  const size_t first = size_t(std::find(full.begin(), full.end(), full[k]) - full.begin());  // its first occurrence
  GenerateOptions o{.max_new_tokens = n};
  o.eos_ids = {full[k], 9999 % 357};
  EXPECT_EQ(session.generate({ids}, o).at(0), cut_at(std::min(first, k)));
  GenerateOptions s{.max_new_tokens = n};
  s.stop = [](size_t output, const std::vector<uint32_t>& tokens) { return output == 0 && tokens.size() == 5; };
  EXPECT_EQ(session.generate({ids}, s).at(0), cut_at(4));
  o.eos_ids = {357};
  EXPECT_THROW(session.generate({ids}, o), Error);  // outside the vocabulary
}

// Sampling a decoder-only model: one seed draws the same tokens whatever the steps per
// submit (each draw keyed by seed, sequence and position); other seeds draw others; top-k
// of 1 is greedy.
TEST_F(GpuTest, Gpt2SampledIdsAreReproduciblePerSeed) {
  auto model = Model::load(ctx(), (kDir / "lm").string(), DType::F32);
  Session session(model);
  const std::vector<uint32_t> prompt = {5, 17, 9};
  GenerateOptions o{.max_new_tokens = 24, .temperature = 1.5f, .seed = 7};
  const auto a = session.generate({prompt}, o).at(0);
  o.max_steps_per_submit = 1;  // one step per submit: the same draws
  EXPECT_EQ(session.generate({prompt}, o).at(0), a);
  int differ = 0;
  for (uint64_t seed : {8u, 9u, 10u}) {
    o.seed = seed;
    differ += session.generate({prompt}, o).at(0) != a;
  }
  EXPECT_GE(differ, 2) << "other seeds drew the same tokens";
  GenerateOptions k1{.max_new_tokens = 12, .temperature = 1.0f, .top_k = 1, .seed = 3};
  EXPECT_EQ(session.generate({prompt}, k1).at(0), references()["models"]["lm"][0]["greedy"].get<std::vector<uint32_t>>());
}

// generation_config.json as save_pretrained writes it (EOS 50256 outside a small random
// model's vocabulary: never produced) loads; its repetition_penalty and sampling
// settings become the defaults; a setting vkformer would drop (typical_p) is refused by name.
TEST_F(GpuTest, Gpt2GenerationConfigIsHonouredOrRefusedByName) {
  const fs::path dir = fs::path(scratch_dir("gpt2_generation")) / "lm";
  fs::create_directories(dir);
  for (const auto& f : fs::directory_iterator(kDir / "lm")) fs::copy_file(f.path(), dir / f.path().filename());
  auto write = [&](const nlohmann::json& j) { std::ofstream(dir / "generation_config.json") << j.dump(); };
  write({{"bos_token_id", 50256}, {"eos_token_id", 50256}, {"repetition_penalty", references()["repetition_penalty"]}});
  auto model = Model::load(ctx(), dir.string(), DType::F32);
  const GenerateOptions o = GenerateOptions::defaults(model->config());
  EXPECT_FLOAT_EQ(o.repetition_penalty, references()["repetition_penalty"].get<float>());
  Session session(model);
  const auto& ref = references()["models"]["lm"][0];
  GenerateOptions n = o;
  n.max_new_tokens = references()["new_tokens"];
  EXPECT_EQ(session.generate({ref["ids"].get<std::vector<uint32_t>>()}, n).at(0),
            ref["greedy_repetition_penalty"].get<std::vector<uint32_t>>());
  // do_sample: sampling by default, transformers' top_k 50 where the file names none.
  write({{"eos_token_id", 50256}, {"do_sample", true}, {"temperature", 0.7}});
  const GenerateOptions sampled = GenerateOptions::defaults(Model::load(ctx(), dir.string(), DType::F32)->config());
  EXPECT_FLOAT_EQ(sampled.temperature, 0.7f);
  EXPECT_EQ(sampled.top_k, 50u);
  EXPECT_FLOAT_EQ(sampled.top_p, 1.0f);
  write({{"eos_token_id", 50256}, {"do_sample", true}, {"typical_p", 0.5}});
  try {
    Model::load(ctx(), dir.string(), DType::F32);
    ADD_FAILURE() << "typical_p was not refused";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("typical_p"), std::string::npos) << e.what();
  }
  fs::remove_all(dir.parent_path());
}
}  // namespace
}  // namespace vkf::test
