// The encoder graph's input stages. Images through the row input: image_patches lays
// each patch's values in (c, kh, kw) order, a Conv2d weight [D, C, kh, kw] read as a
// Linear weight [D, C kh kw] projects them (with its bias and the positions added in the
// same GEMM), and the stack's input equals torch's Conv2d(stride = kernel), ViT's patch
// embedding, flattened as transformers does (tools/image_patch_references/). Tolerance:
// fp32 sums of 75 products of magnitude ~1: 1e-5 relative to the output's scale.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "encoder_graph.hpp"
#include "hf_references.hpp"
#include "support/gpu_test.hpp"
#include "vkformer/tensor_io.hpp"

namespace vkf::test {
namespace {

TEST_F(GpuTest, ImagePatchesThroughTheRowInputAsConv2dComputesThem) {
  const nlohmann::json ref =
      read_references(std::string(VKF_SOURCE_DIR) + "/tests/model/image_patch_references.json");
  const uint32_t B = ref["batch"], C = ref["channels"], H = ref["height"], W = ref["width"], D = ref["d"];
  const uint32_t ph = ref["patch"][0], pw = ref["patch"][1], P = (H / ph) * (W / pw), K = C * ph * pw;
  const auto patches = model::image_patches(ref["images"].get<std::vector<float>>(), B, C, H, W, ph, pw);
  ASSERT_EQ(patches.size(), size_t(B) * P * K);
  Context& c = ctx();
  model::Linear projection{.weight = upload_floats(c, ref["weight"].get<std::vector<float>>(), DType::F32, "weight"),
                           .bias = upload_floats(c, ref["bias"].get<std::vector<float>>(), DType::F32, "bias"),
                           .out = D, .in = K};
  const Buffer series = upload_floats(c, patches, DType::F32, "patches");
  const Buffer positions = upload_floats(c, ref["positions"].get<std::vector<float>>(), DType::F32, "positions");
  auto scratch = [&](const char* name) { return c.buffer(uint64_t(B) * P * 3 * D * 4, name); };
  const model::EncoderBuffers b{scratch("x"), scratch("y"), scratch("qkv"), scratch("attn"), scratch("hidden"), {}};
  const Buffer out = c.buffer(uint64_t(B) * P * D * 4, "out");
  const std::vector<model::EncoderLayer> none;  // the input stage alone: no layers, no norms
  Ops ops(c, DType::F32);
  model::EncoderGraph graph(c, ops, {.settings = {.d_model = D, .heads = 1, .head_dim = D}, .layers = &none},
                            [&](CommandList& cl, uint32_t rows) {
                              return model::LayerRecorder{.ops = ops, .cl = cl, .rows = rows, .d_model = D};
                            });
  const BufferView hidden = graph.run(
      {.batch = B, .seq_len = P,
       .rows = model::RowInput{.series = series.view(), .width = K, .stride = K, .item_stride = P * K,
                               .projection = &projection, .positions = positions.view()}},
      b, out.view());
  const auto got = download_floats(c, Buffer(b.x), uint64_t(B) * P * D, DType::F32);
  EXPECT_EQ(hidden.alloc, b.x.view().alloc);  // no final norm: the input stage's rows themselves
  EXPECT_LT(relative_error(got, ref["out"].get<std::vector<double>>()), 1e-5);
}

TEST(ImagePatches, SizesThatDoNotDivideIntoPatchesAreRefusedByName) {
  const std::vector<float> image(3 * 10 * 15);
  EXPECT_EQ(model::image_patches(image, 1, 3, 10, 15, 5, 5).size(), image.size());
  for (auto [h, w, ph, pw] : {std::tuple{10u, 15u, 4u, 5u}, {10u, 15u, 5u, 4u}, {10u, 15u, 11u, 5u}, {10u, 15u, 0u, 5u}}) {
    try {
      (void)model::image_patches(image, 1, 3, h, w, ph, pw);
      ADD_FAILURE() << ph << " x " << pw << " accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("do not divide into"), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(model::image_patches(image, 2, 3, 10, 15, 5, 5), Error);  // 2 images' values expected
}

}  // namespace
}  // namespace vkf::test
