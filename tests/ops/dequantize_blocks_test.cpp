// Ops::dequantize_blocks (shaders/dequantize_blocks.comp) against the host's
// dequantize_blocks, every type, both storage types, as the device is and under the
// portable profile, poisoned output: the same values, rounded once to the storage type.
#include "support/ops_test.hpp"
#include "vkformer/blocks.hpp"
#include "vkformer/tensor_io.hpp"

namespace vkf::test {
namespace {

class DequantizeBlocksTest : public OpsTest {};

// The dequantizing kernel gives the host's values: d (code - offset) (+ m), rounded once.
TEST_P(DequantizeBlocksTest, DequantizedAsTheHostDoes) {
  std::mt19937_64 rng(11);
  for (BlockType t : kBlockTypes) {
    SCOPED_TRACE(block_type_name(t));
    // 17 rows: a whole group of 16 interleaved rows and one alone (CPU drivers' layout).
    const uint32_t rows = 17, cols = is_k_quant(t) ? 512 : 96;
    std::vector<float> w(size_t(rows) * cols);
    for (auto& x : w) x = float(random_values(1, rng, -2, 2)[0]);
    const auto blocks = quantize_blocks(t, w);
    const auto host = dequantize_blocks(t, blocks);
    Buffer b = upload_blocks(ctx(), t, blocks, rows, cols, "W"), out = poisoned(ctx(), host.size(), dtype(), "out");
    auto cl = ctx().command_list();
    ops().dequantize_blocks(cl, t, b.view(), out.view(), rows, cols);
    cl.submit();
    const auto got = download_as(ctx(), out, host.size(), dtype());
    for (size_t i = 0; i < host.size(); ++i) ASSERT_EQ(got[i], stored(host[i], dtype())) << "value " << i;
  }
}

// A view too small for the weight, or rows that are not whole blocks, are refused by name.
TEST_P(DequantizeBlocksTest, RefusedByName) {
  Buffer b = upload_blocks(ctx(), BlockType::Q4_0, std::vector<uint8_t>(18 * 2, 0), 1, 64, "W");
  Buffer out = ctx().buffer(64 * 4, "out");
  auto cl = ctx().command_list();
  EXPECT_THROW(ops().dequantize_blocks(cl, BlockType::Q4_0, b.view(), out.view(), 1, 48), Error);
  try {
    ops().dequantize_blocks(cl, BlockType::Q4_0, b.view(), out.view(), 4, 64);
    ADD_FAILURE() << "a view for 1 row read as 4";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("needs"), std::string::npos) << e.what();
  }
}

VKF_FOR_EACH_DTYPE(DequantizeBlocksTest);

}  // namespace
}  // namespace vkf::test
