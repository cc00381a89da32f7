// Embedding: table rows scaled, sinusoidal positions added; bad ids poison, never read.
#include "support/ops_test.hpp"
#include "ops/reference.hpp"
#include "vkformer/blocks.hpp"
#include "vkformer/tensor_io.hpp"

namespace vkf::test {
namespace {

class EmbeddingTest : public OpsTest {};

TEST_P(EmbeddingTest, EmbeddingScalesAndAddsSinusoidalPositions) {
  auto seed = test_seed();
  VKF_SEED_TRACE(seed);
  std::mt19937_64 rng(seed);
  const uint32_t vocab = 37, dim = 18, batch = 3, seq = 7, offset = 5, positions = 64;
  auto table = random_values(size_t(vocab) * dim, rng);
  for (auto& e : table) e = stored(e, dtype());
  std::vector<uint32_t> ids(batch * seq);
  for (auto& id : ids) id = uint32_t(rng() % vocab);
  ids[0] = 0;
  ids[1] = vocab - 1;
  const float scale = std::sqrt(float(dim));
  auto pe = sinusoidal_positions(positions, dim);
  // PE from its formula in double, and the table entry, scaled.
  std::vector<double> want(size_t(batch) * seq * dim), mag(want.size());
  for (uint32_t r = 0; r < batch * seq; ++r)
    for (uint32_t c = 0; c < dim; ++c) {
      const double p = offset + r % seq, angle = p / std::pow(10000.0, double(c - c % 2) / dim);
      const double e = table[size_t(ids[r]) * dim + c] * double(scale);
      want[size_t(r) * dim + c] = e + (c % 2 ? std::cos(angle) : std::sin(angle));
      mag[size_t(r) * dim + c] = std::abs(e) + 1;
    }
  Buffer bid = upload_u32(ctx(), ids, "ids"), bt = upload_as(ctx(), table, dtype(), "table");
  Buffer bpe = ctx().buffer(pe.size() * 4, "pe");
  ctx().upload(bpe, std::span<const float>(pe));
  Buffer out = poisoned(ctx(), want.size(), dtype(), "out");
  auto cl = ctx().command_list();
  Ops o = ops();
  Embedding e{.rows = batch * seq, .vocab = vocab, .dim = dim, .scale = scale, .seq_len = seq,
              .position_offset = offset, .positions = positions};
  o.embedding(cl, e, bid.view(), bt.view(), bpe.view(), out.view());
  cl.submit();
  // fp32: table * scale and the fp32-rounded PE add three roundings: 1e-6 of the magnitude.
  EXPECT_TRUE(close(download_as(ctx(), out, want.size(), dtype()), want, mag, dtype() == DType::F16 ? 1e-3 : 1e-6));

  // Positions past the table and an out-of-range id.
  e.position_offset = positions - 2;
  EXPECT_THROW(o.embedding(cl, e, bid.view(), bt.view(), bpe.view(), out.view()), Error);
  Buffer bad = upload_u32(ctx(), {vocab}, "bad_id");
  Buffer bad_out = poisoned_finite(ctx(), dim, dtype(), "out");  // so an unwritten row cannot pass as NaN
  auto cl2 = ctx().command_list();
  o.embedding(cl2, {.rows = 1, .vocab = vocab, .dim = dim}, bad.view(), bt.view(), std::nullopt, bad_out.view());
  cl2.submit();
  auto row = download_as(ctx(), bad_out, dim, dtype());
  for (double x : row) EXPECT_TRUE(std::isnan(x)) << "an out-of-range id must not read another row";
}

// Token types (BERT's token_type_embeddings): each row's type's row of the fp32 type
// table added to the word and the position; a type id past the table poisons its row
// (the host checks ids; the kernel never reads outside the table). Types without their
// ids or table, and ids or a table without types, are refused by name.
TEST_P(EmbeddingTest, AddsEachRowsTokenTypeEmbedding) {
  auto seed = test_seed();
  VKF_SEED_TRACE(seed);
  std::mt19937_64 rng(seed);
  const uint32_t vocab = 31, dim = 17, batch = 2, seq = 9, positions = 12, types = 3;
  auto table = random_values(size_t(vocab) * dim, rng);
  for (auto& e : table) e = stored(e, dtype());
  std::vector<float> pe(size_t(positions) * dim), type_table(size_t(types) * dim);
  for (auto& v : pe) v = float(random_values(1, rng)[0]);
  for (auto& v : type_table) v = float(random_values(1, rng)[0]);
  std::vector<uint32_t> ids(batch * seq), type_ids(batch * seq);
  for (auto& id : ids) id = uint32_t(rng() % vocab);
  for (auto& t : type_ids) t = uint32_t(rng() % types);
  type_ids[5] = types;  // past the table: that row poisoned
  std::vector<double> want(size_t(batch) * seq * dim), mag(want.size());
  for (uint32_t r = 0; r < batch * seq; ++r)
    for (uint32_t c = 0; c < dim; ++c) {
      const double w = table[size_t(ids[r]) * dim + c], p = pe[size_t(r % seq) * dim + c];
      const double t = type_ids[r] < types ? double(type_table[size_t(type_ids[r]) * dim + c]) : std::nan("");
      want[size_t(r) * dim + c] = w + p + t;
      mag[size_t(r) * dim + c] = std::abs(w) + std::abs(p) + std::abs(t);
    }
  Buffer bid = upload_u32(ctx(), ids, "ids"), btid = upload_u32(ctx(), type_ids, "type_ids");
  Buffer bt = upload_as(ctx(), table, dtype(), "table");
  Buffer bpe = upload_floats(ctx(), pe, DType::F32, "pe"), btt = upload_floats(ctx(), type_table, DType::F32, "types");
  Buffer out = poisoned_finite(ctx(), want.size(), dtype(), "out");  // so the poisoned row cannot pass unwritten
  Ops o = ops();
  const Embedding e{.rows = batch * seq, .vocab = vocab, .dim = dim, .seq_len = seq, .positions = positions,
                    .types = types};
  auto cl = ctx().command_list();
  o.embedding(cl, e, bid.view(), bt.view(), bpe.view(), out.view(), std::nullopt, std::nullopt, btid.view(), btt.view());
  cl.submit();
  auto got = download_as(ctx(), out, want.size(), dtype());
  for (uint32_t c = 0; c < dim; ++c) EXPECT_TRUE(std::isnan(got[5 * dim + c])) << "a type past the table must poison";
  for (auto* v : {&got, &want, &mag}) v->erase(v->begin() + 5 * dim, v->begin() + 6 * dim);
  // Three fp32 roundings of sums of terms ~1 (fp16: one more of the result).
  EXPECT_TRUE(close(got, want, mag, dtype() == DType::F16 ? 1e-3 : 1e-6));
  EXPECT_THROW(o.embedding(cl, e, bid.view(), bt.view(), bpe.view(), out.view()), Error);
  Embedding no_types = e;
  no_types.types = 0;
  EXPECT_THROW(o.embedding(cl, no_types, bid.view(), bt.view(), bpe.view(), out.view(), std::nullopt, std::nullopt,
                           btid.view(), btt.view()),
               Error);
}

// A replayed decode step takes its position from the DecodeStep state: the same rows as
// a recorded call at that position_offset, exactly.
TEST_P(EmbeddingTest, TakesThePositionFromADecodeStep) {
  auto seed = test_seed();
  VKF_SEED_TRACE(seed);
  std::mt19937_64 rng(seed);
  const uint32_t vocab = 29, dim = 24, batch = 3, positions = 20;
  auto table = random_values(size_t(vocab) * dim, rng);
  std::vector<uint32_t> ids = {4, 0, vocab - 1};
  auto pe = sinusoidal_positions(positions, dim);
  Buffer bid = upload_u32(ctx(), ids, "ids"), bt = upload_as(ctx(), table, dtype(), "table");
  Buffer bpe = ctx().buffer(pe.size() * 4, "pe");
  ctx().upload(bpe, std::span<const float>(pe));
  Buffer state = upload_u32(ctx(), {0, 0, 0}, "decode_step");
  Buffer stepped = poisoned(ctx(), size_t(batch) * dim, dtype(), "stepped");
  Ops o = ops();
  const Embedding e{.rows = batch, .vocab = vocab, .dim = dim, .positions = positions};
  auto cl = ctx().command_list();
  o.embedding(cl, e, bid.view(), bt.view(), bpe.view(), stepped.view(), DecodeStep{state.view(), positions - 1});
  for (uint32_t position : {0u, 7u, positions - 1}) {
    const DecodeStep::State st{.step = position, .position = position, .key_count = position + 1};
    ctx().upload(state, &st, sizeof st);
    cl.submit();
    Buffer recorded = poisoned(ctx(), size_t(batch) * dim, dtype(), "recorded");
    auto cl2 = ctx().command_list();
    Embedding at = e;
    at.position_offset = position;
    o.embedding(cl2, at, bid.view(), bt.view(), bpe.view(), recorded.view());
    cl2.submit();
    auto want = download_as(ctx(), recorded, size_t(batch) * dim, dtype());
    auto got = download_as(ctx(), stepped, size_t(batch) * dim, dtype());
    for (double x : want) ASSERT_FALSE(std::isnan(x));
    EXPECT_EQ(got, want) << "position " << position;
  }
  auto cl3 = ctx().command_list();  // a step past the table
  EXPECT_THROW(o.embedding(cl3, e, bid.view(), bt.view(), bpe.view(), stepped.view(), DecodeStep{state.view(), positions}),
               Error);
  cl3.submit();
}

// Left padding: each sequence's positions start its shift earlier (rows before the
// shift take position 0), recorded and from a decode step; the double reference of the
// sinusoid at those positions, every sequence with its own shift (0, 1, the whole
// sequence and past it).
TEST_P(EmbeddingTest, EachSequenceShiftsItsPositionsByItsLeftPadding) {
  auto seed = test_seed();
  VKF_SEED_TRACE(seed);
  std::mt19937_64 rng(seed);
  const uint32_t vocab = 23, dim = 17, batch = 4, seq = 5, offset = 3, positions = 16;
  const std::vector<uint32_t> shift = {0, 1, offset + seq - 1, 255};
  auto table = random_values(size_t(vocab) * dim, rng);
  for (auto& e : table) e = stored(e, dtype());
  std::vector<uint32_t> ids(batch * seq);
  for (auto& id : ids) id = uint32_t(rng() % vocab);
  auto pe = sinusoidal_positions(positions, dim);
  auto want_at = [&](uint32_t first) {  // rows' values when the sequences' first row is at `first`
    std::vector<double> want(size_t(batch) * seq * dim), mag(want.size());
    for (uint32_t r = 0; r < batch * seq; ++r)
      for (uint32_t c = 0; c < dim; ++c) {
        const int64_t unshifted = first + r % seq, shifted = unshifted - int64_t(shift[r / seq]);
        const double p = double(std::max<int64_t>(shifted, 0)), angle = p / std::pow(10000.0, double(c - c % 2) / dim);
        const double e = table[size_t(ids[r]) * dim + c];
        want[size_t(r) * dim + c] = e + (c % 2 ? std::cos(angle) : std::sin(angle));
        mag[size_t(r) * dim + c] = std::abs(e) + 1;
      }
    return std::pair{want, mag};
  };
  Buffer bid = upload_u32(ctx(), ids, "ids"), bt = upload_as(ctx(), table, dtype(), "table");
  Buffer bs = upload_u32(ctx(), shift, "shift");
  Buffer bpe = ctx().buffer(pe.size() * 4, "pe");
  ctx().upload(bpe, std::span<const float>(pe));
  Buffer out = poisoned(ctx(), size_t(batch) * seq * dim, dtype(), "out");
  Ops o = ops();
  const Embedding e{.rows = batch * seq, .vocab = vocab, .dim = dim, .seq_len = seq, .position_offset = offset,
                    .positions = positions};
  auto cl = ctx().command_list();
  o.embedding(cl, e, bid.view(), bt.view(), bpe.view(), out.view(), std::nullopt, bs.view());
  cl.submit();
  const auto [want, mag] = want_at(offset);
  EXPECT_TRUE(close(download_as(ctx(), out, want.size(), dtype()), want, mag, dtype() == DType::F16 ? 1e-3 : 1e-6));
  // One token per sequence from a decode step at position 9.
  Buffer state = upload_u32(ctx(), {9, 9, 10}, "decode_step");
  Buffer one = poisoned(ctx(), size_t(batch) * dim, dtype(), "one");
  std::vector<uint32_t> last(batch);
  for (uint32_t b = 0; b < batch; ++b) last[b] = ids[b * seq];
  Buffer blast = upload_u32(ctx(), last, "last");
  auto cl2 = ctx().command_list();
  o.embedding(cl2, {.rows = batch, .vocab = vocab, .dim = dim, .positions = positions}, blast.view(), bt.view(),
              bpe.view(), one.view(), DecodeStep{state.view(), 9}, bs.view());
  cl2.submit();
  const auto [w9, m9] = want_at(9);
  std::vector<double> want1, mag1;
  for (uint32_t b = 0; b < batch; ++b)
    for (uint32_t c = 0; c < dim; ++c) want1.push_back(w9[size_t(b * seq) * dim + c]), mag1.push_back(m9[size_t(b * seq) * dim + c]);
  EXPECT_TRUE(close(download_as(ctx(), one, want1.size(), dtype()), want1, mag1, dtype() == DType::F16 ? 1e-3 : 1e-6));
  // A shift without a positional table, or too few shifts: named errors.
  EXPECT_THROW(o.embedding(cl, e, bid.view(), bt.view(), std::nullopt, out.view(), std::nullopt, bs.view()), Error);
  EXPECT_THROW(o.embedding(cl, e, bid.view(), bt.view(), bpe.view(), out.view(), std::nullopt, bs.view(0, 8)), Error);
}

// A table in llama.cpp's blocks (Embedding::table_blocks): each row read is the host's
// dequantized row (dequantize_blocks), scaled, rounded once to the storage type; every
// type, ids at both ends of the vocabulary, an id outside it poisoned.
TEST_P(EmbeddingTest, ReadsATableInBlocks) {
  std::mt19937_64 rng(5);
  const uint32_t vocab = 37, rows = 6;
  const std::vector<uint32_t> ids = {0, vocab - 1, 5, 17, 5, vocab + 3};
  for (BlockType t : kBlockTypes) {
    SCOPED_TRACE(block_type_name(t));
    const uint32_t dim = is_k_quant(t) ? 256 : 64;
    std::vector<float> table(size_t(vocab) * dim);
    for (auto& x : table) x = float(random_values(1, rng)[0]);
    const auto blocks = quantize_blocks(t, table);
    const auto host = dequantize_blocks(t, blocks);
    Buffer bid = upload_u32(ctx(), ids, "ids"), bt = upload_blocks(ctx(), t, blocks, vocab, dim, "table");
    Buffer out = poisoned(ctx(), size_t(rows) * dim, dtype(), "out");
    auto cl = ctx().command_list();
    ops().embedding(cl, {.rows = rows, .vocab = vocab, .dim = dim, .scale = 2.0f, .seq_len = rows, .table_blocks = t},
                    bid.view(), bt.view(), std::nullopt, out.view());
    cl.submit();
    const auto got = download_as(ctx(), out, size_t(rows) * dim, dtype());
    for (uint32_t r = 0; r < rows; ++r)
      for (uint32_t c = 0; c < dim; ++c) {
        const double v = got[size_t(r) * dim + c];
        if (ids[r] >= vocab) {
          ASSERT_TRUE(std::isnan(v)) << "row " << r;
          continue;
        }
        ASSERT_EQ(v, stored(double(host[size_t(ids[r]) * dim + c] * 2.0f), dtype())) << "row " << r << " col " << c;
      }
  }
}

VKF_FOR_EACH_DTYPE(EmbeddingTest);

}  // namespace
}  // namespace vkf::test

namespace vkf::test {
namespace {

// A table larger than one binding (a 50k-token embedding in fp32 on a device that binds
// 128 MiB) is read in parts: rows from the first part, the last and either side of the
// boundary, and an id outside the vocabulary (NaN, written once), all exact.
TEST_P(EmbeddingTest, TableLargerThanOneBindingIsReadInParts) {
  const uint64_t range = ctx().capabilities().max_storage_buffer_range, e = dtype_bytes(dtype());
  if (range > (256ull << 20)) GTEST_SKIP() << "this device binds " << (range >> 20) << " MiB: the table would be too large";
  const uint32_t dim = 4096, vocab = uint32_t(range / (dim * e)) + 7, part = uint32_t((range - 256) / (dim * e));
  std::vector<float> table(uint64_t(vocab) * dim);
  for (uint64_t i = 0; i < table.size(); ++i) table[i] = float(int64_t(i % 2003) - 1001) / 64.0f;  // exact in fp16
  Buffer bt = upload_floats(ctx(), table, dtype(), "table");
  const std::vector<uint32_t> ids = {0, part - 1, part, vocab - 1, 5, vocab, part + 3};
  Buffer bid = upload_u32(ctx(), ids, "ids"), out = poisoned(ctx(), ids.size() * dim, dtype(), "out");
  auto cl = ctx().command_list();
  ops().embedding(cl, {.rows = uint32_t(ids.size()), .vocab = vocab, .dim = dim, .seq_len = uint32_t(ids.size())},
                  bid.view(), bt.view(), std::nullopt, out.view());
  cl.submit();
  const auto got = download_as(ctx(), out, ids.size() * dim, dtype());
  for (size_t r = 0; r < ids.size(); ++r)
    for (uint32_t c = 0; c < dim; c += 97) {
      if (ids[r] >= vocab) {
        EXPECT_TRUE(std::isnan(got[r * dim + c])) << "id " << ids[r];
        continue;
      }
      ASSERT_EQ(got[r * dim + c], table[uint64_t(ids[r]) * dim + c]) << "id " << ids[r] << " column " << c;
    }
}

}  // namespace
}  // namespace vkf::test
