// BERT (an encoder-only model) against transformers' BertModel, BertForMaskedLM and
// BertForSequenceClassification on random weights (tools/hf_references/
// make_bert_references.py, transformers 4.36.2): the last hidden state, the pooler's
// output and the heads' logits of single sequences of 1 to 40 tokens with token types,
// within 1e-4 relative in fp32 and 1e-2 in fp16 (activations stored in fp16 across two
// post-norm layers), one at a time and padded together in a batch; bad input and a model with a decoder refused by name.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "hf_references.hpp"
#include "support/gpu_test.hpp"
#include "vkformer/embedder.hpp"
#include "vkformer/encoder.hpp"
#include "vkformer/tokenizer.hpp"
#include "vkformer/model.hpp"

namespace fs = std::filesystem;

namespace vkf::test {
namespace {

const fs::path kHf = fs::path(VKF_SOURCE_DIR) / "tests" / "hf";
const fs::path kDir = kHf / "bert";

struct Case {
  const char* family;  // tests/hf/<family>/<model>: bert, roberta, distilbert
  const char* model;
  DType dtype;
};

class Bert : public GpuTest, public ::testing::WithParamInterface<Case> {};

TEST_P(Bert, HiddenStatesPoolerAndHeadsAsTransformers) {
  const auto [family, name, dtype] = GetParam();
  const std::string which(name), fam(family);
  const fs::path dir = kHf / family;
  const nlohmann::json refs = read_references(dir / "references.json");
  auto model = Model::load(ctx(), (dir / name).string(), dtype);
  const ModelConfig& c = model->config();
  EXPECT_EQ(c.kind, ModelKind::EncoderOnly);
  EXPECT_EQ(c.token_types, fam == "bert" ? 2u : fam == "roberta" ? 1u : 0u);
  EXPECT_EQ(c.max_position, 64u);  // RoBERTa's 66 rows less padding_idx + 1
  EXPECT_EQ(model_task(ModelFiles((dir / name).string())), ModelTask::Encoder);
  if (which == "classifier") EXPECT_EQ(c.labels, (std::vector<std::string>{"negative", "neutral", "positive"}));
  Encoder encoder(model);
  const double tolerance = dtype == DType::F16 ? 1e-2 : 1e-4;
  size_t checked = 0;
  for (const auto& ref : refs["models"][name]) {
    const auto ids = ref["ids"].get<std::vector<uint32_t>>();
    SCOPED_TRACE(std::to_string(ids.size()) + " tokens");
    const auto types = ref.value("token_types", std::vector<uint32_t>{});
    const EncoderOutput o = encoder.encode(ids, types);
    EXPECT_EQ(o.tokens, ids.size());
    EXPECT_EQ(o.width, c.d_model);
    EXPECT_LT(relative_error(o.hidden, ref["last_hidden_state"].get<std::vector<double>>()), tolerance);
    if (ref.contains("pooler_output"))
      EXPECT_LT(relative_error(o.pooled, ref["pooler_output"].get<std::vector<double>>()), tolerance);
    else if (fam != "bert")
      EXPECT_TRUE(o.pooled.empty());  // no pooler (a classifier's own dense layer gives no pooled output)
    if (ref.contains("logits")) {
      EXPECT_EQ(o.logits_rows, which == "mlm" ? ids.size() : 1u);
      EXPECT_EQ(o.logits_cols, which == "mlm" ? c.src_vocab_size : 3u);
      EXPECT_LT(relative_error(o.logits, ref["logits"].get<std::vector<double>>()), tolerance);
    } else {
      EXPECT_TRUE(o.logits.empty());
    }
    ++checked;
  }
  EXPECT_EQ(checked, 4u);
  // The same sequences in one batch, padded to the longest (40) and masked: each item as
  // transformers gives it alone. Reversed, so the first item is the longest and the
  // pooler and classifier read rows after padding.
  std::vector<std::vector<uint32_t>> ids, types;
  std::vector<const nlohmann::json*> items;
  for (const auto& ref : refs["models"][name]) items.insert(items.begin(), &ref);
  for (const auto* ref : items) ids.push_back((*ref)["ids"]), types.push_back(ref->value("token_types", std::vector<uint32_t>{}));
  const std::vector<EncoderOutput> batch = encoder.encode_batch(ids, types);
  ASSERT_EQ(batch.size(), items.size());
  for (size_t b = 0; b < items.size(); ++b) {
    const nlohmann::json& ref = *items[b];
    SCOPED_TRACE("batch item " + std::to_string(b) + ", " + std::to_string(ids[b].size()) + " tokens");
    EXPECT_EQ(batch[b].tokens, ids[b].size());
    EXPECT_LT(relative_error(batch[b].hidden, ref["last_hidden_state"].get<std::vector<double>>()), tolerance);
    if (ref.contains("pooler_output"))
      EXPECT_LT(relative_error(batch[b].pooled, ref["pooler_output"].get<std::vector<double>>()), tolerance);
    if (ref.contains("logits")) EXPECT_LT(relative_error(batch[b].logits, ref["logits"].get<std::vector<double>>()), tolerance);
  }
}

INSTANTIATE_TEST_SUITE_P(, Bert,
                         ::testing::Values(Case{"bert", "base", DType::F32}, Case{"bert", "base", DType::F16},
                                           Case{"bert", "mlm", DType::F32}, Case{"bert", "mlm", DType::F16},
                                           Case{"bert", "classifier", DType::F32}, Case{"bert", "classifier", DType::F16},
                                           Case{"roberta", "base", DType::F32}, Case{"roberta", "base", DType::F16},
                                           Case{"roberta", "mlm", DType::F32}, Case{"roberta", "mlm", DType::F16},
                                           Case{"roberta", "classifier", DType::F32},
                                           Case{"roberta", "classifier", DType::F16},
                                           Case{"distilbert", "mlm", DType::F32}, Case{"distilbert", "mlm", DType::F16},
                                           Case{"distilbert", "classifier", DType::F32},
                                           Case{"distilbert", "classifier", DType::F16}),
                         [](const auto& info) {
                           return std::string(info.param.family) + "_" + info.param.model +
                                  (info.param.dtype == DType::F16 ? "_fp16" : "_fp32");
                         });

// RoBERTa's tokenizer as RobertaTokenizer (vocab.json + merges.txt) and
// RobertaTokenizerFast (tokenizer.json: RobertaProcessing) give it, and its sentence
// embeddings (mean pooling, cut at 8 tokens before </s>) as sentence-transformers gives them.
TEST_F(GpuTest, RobertaTokenizerAndEmbeddingsAsTransformers) {
  const fs::path dir = kHf / "roberta" / "base";
  const nlohmann::json refs = read_references(kHf / "roberta" / "references.json")["tokenizer"];
  auto slurp = [](const fs::path& p) {
    std::ifstream f(p, std::ios::binary);
    std::stringstream s;
    s << f.rdbuf();
    return s.str();
  };
  const std::string config = slurp(dir / "config.json"), vocab = slurp(dir / "vocab.json"), merges = slurp(dir / "merges.txt");
  const auto fast = Tokenizer::for_model(dir.string());
  const auto slow = Tokenizer::for_model(
      ModelFiles::in_memory({{"config.json", config}, {"vocab.json", vocab}, {"merges.txt", merges}}));
  for (size_t i = 0; i < refs["texts"].size(); ++i) {
    const std::string text = refs["texts"][i];
    EXPECT_EQ(fast->encode(text), refs["fast"][i].get<std::vector<uint32_t>>()) << text;
    EXPECT_EQ(slow->encode(text), refs["slow"][i].get<std::vector<uint32_t>>()) << text;
  }
  const std::string weights = slurp(dir / "model.safetensors"), tokenizer = slurp(dir / "tokenizer.json");
  const std::string modules = R"([{"path": "", "type": "sentence_transformers.models.Transformer"},
                                  {"path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}])";
  const std::string pooling = R"({"word_embedding_dimension": 64, "pooling_mode_mean_tokens": true})";
  const std::string st = R"({"max_seq_length": 8})";
  const ModelFiles files = ModelFiles::in_memory({{"config.json", config}, {"model.safetensors", weights},
                                                  {"tokenizer.json", tokenizer}, {"modules.json", modules},
                                                  {"1_Pooling_config.json", pooling}, {"sentence_bert_config.json", st}});
  Embedder embedder(Model::load(ctx(), files, DType::F32), files);
  const Embeddings e = embedder.embed(refs["texts"].get<std::vector<std::string>>());
  size_t cut = 0;
  for (size_t i = 0; i < refs["texts"].size(); ++i) {
    cut += refs["fast"][i].size() > 8;
    const std::vector<float> got(e.values.begin() + i * 64, e.values.begin() + (i + 1) * 64);
    EXPECT_LT(relative_error(got, refs["sentence_embeddings_cut_8"][i].get<std::vector<double>>()), 1e-4) << "text " << i;
  }
  EXPECT_EQ(e.truncated.size(), cut);
  EXPECT_GT(cut, 0u);
}

TEST_F(GpuTest, BertBadInputIsRefusedByName) {
  auto model = Model::load(ctx(), (kDir / "base").string(), DType::F32);
  Encoder encoder(model);
  auto refused = [&](const std::vector<uint32_t>& ids, const std::vector<uint32_t>& types, const std::string& words) {
    SCOPED_TRACE(words);
    try {
      (void)encoder.encode(ids, types);
      ADD_FAILURE() << "accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
      EXPECT_EQ(e.kind(), ErrorKind::InvalidInput);
    }
  };
  refused({}, {}, "no token ids");
  refused({5, 300}, {}, "token id 300 is outside the vocabulary of 300");
  refused(std::vector<uint32_t>(65, 5), {}, "65 tokens are more than the model's max_position 64");
  refused({5, 6}, {0}, "1 token types for 2 ids");
  refused({5, 6}, {0, 2}, "token type 2 is outside the model's 2 types");
  // A model with a decoder goes to Session, not Encoder.
  auto gpt2 = Model::load(ctx(), (fs::path(VKF_SOURCE_DIR) / "tests" / "hf" / "gpt2" / "base").string(), DType::F32);
  try {
    Encoder wrong(gpt2);
    ADD_FAILURE() << "a decoder-only model accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("is decoder-only: Session runs it"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace vkf::test
