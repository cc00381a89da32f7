// attention_plan without a device: the fused kernel, its defines, texels and workgroups
// chosen for the attentions every family runs on each device class, pinned; and the rules
// that pick between them (the attention's own kernel, the tuning file, the default).
#include <gtest/gtest.h>

#include <sstream>

#include "attention_plan.hpp"
#include "ops/device_classes.hpp"

namespace vkf::test {
namespace {

using ops::AttentionPlan;
using ops::AttentionProblem;

// Q, K, V and O packed and starting aligned: 8 heads of 64 unless said.
AttentionProblem attention(const std::string& name, DType dt) {
  Attention a{.batch = 1, .heads = 8, .head_dim = 64};
  if (name == "decode step over 40 keys") a.q_len = 1, a.kv_len = 40;
  if (name == "prompt 24 causal") a.q_len = a.kv_len = 24, a.causal = true;
  if (name == "encoder 256") a.q_len = a.kv_len = 256;
  if (name == "heads of 128, 17 queries") a.heads = 4, a.head_dim = 128, a.q_len = a.kv_len = 17;
  if (name == "grouped 9 over 3, 24 causal") a.heads = 9, a.kv_heads = 3, a.q_len = a.kv_len = 24, a.causal = true;
  AttentionProblem p{.a = ops::resolved_attention(a), .dtype = dt, .step = name == "decode step over 40 keys"};
  const uint64_t e = dtype_bytes(dt);
  p.q.bytes = p.o.bytes = uint64_t(a.q_len) * a.heads * a.head_dim * e;
  p.k.bytes = p.v.bytes = uint64_t(a.kv_len) * p.a.kv_heads * a.head_dim * e;
  return p;
}

const char* kAttentions[] = {"decode step over 40 keys", "prompt 24 causal", "encoder 256", "heads of 128, 17 queries",
                             "grouped 9 over 3, 24 causal"};

std::string describe(const AttentionPlan& p) {
  std::ostringstream s;
  s << p.shader << " [";
  for (size_t i = 0; i < p.defines.size(); ++i) s << (i ? " " : "") << p.defines[i].first << "=" << p.defines[i].second;
  s << "] texels " << p.texels.size() << " groups " << p.groups.x << "x" << p.groups.y << "x" << p.groups.z;
  return s.str();
}

struct Pin {
  const char* device;
  const char* attention;
  DType dtype;
  std::string want;
};

// Pinned: a change in any choice shows here first. Why each is what it is:
// lib/ops/attention_plan.cpp (Direct on CPU drivers, flash-attention-2's tiles on GPUs,
// key blocks as large as shared memory holds).
const Pin kPins[] = {
    {"lavapipe", "decode step over 40 keys", DType::F32,
     "attention_direct.comp [HEAD_DIM=64 TQ=1 SG=8 TEXEL_KV=1] texels 3 groups 1x8x1"},
    {"lavapipe", "prompt 24 causal", DType::F32,
     "attention_direct.comp [HEAD_DIM=64 TQ=4 SG=8 TEXEL_KV=1] texels 3 groups 6x8x1"},
    {"lavapipe", "encoder 256", DType::F32,
     "attention_direct.comp [HEAD_DIM=64 TQ=4 SG=8 TEXEL_KV=1] texels 3 groups 64x8x1"},
    {"lavapipe", "heads of 128, 17 queries", DType::F32,
     "attention_direct.comp [HEAD_DIM=128 TQ=4 SG=8 TEXEL_KV=1] texels 3 groups 5x4x1"},
    {"lavapipe", "grouped 9 over 3, 24 causal", DType::F32,
     "attention_direct.comp [HEAD_DIM=64 TQ=4 SG=8 TEXEL_KV=1] texels 3 groups 6x9x1"},
    {"lavapipe", "decode step over 40 keys", DType::F16,
     "attention_direct.comp [HEAD_DIM=64 TQ=1 SG=8 TEXEL_KV=1] texels 3 groups 1x8x1"},
    {"lavapipe", "prompt 24 causal", DType::F16,
     "attention_direct.comp [HEAD_DIM=64 TQ=4 SG=8 TEXEL_KV=1] texels 3 groups 6x8x1"},
    {"lavapipe", "encoder 256", DType::F16,
     "attention_direct.comp [HEAD_DIM=64 TQ=4 SG=8 TEXEL_KV=1] texels 3 groups 64x8x1"},
    {"lavapipe", "heads of 128, 17 queries", DType::F16,
     "attention_direct.comp [HEAD_DIM=128 TQ=4 SG=8 TEXEL_KV=1] texels 3 groups 5x4x1"},
    {"lavapipe", "grouped 9 over 3, 24 causal", DType::F16,
     "attention_direct.comp [HEAD_DIM=64 TQ=4 SG=8 TEXEL_KV=1] texels 3 groups 6x9x1"},
    {"portable", "decode step over 40 keys", DType::F32,
     "attention_tiled.comp [HEAD_DIM=64 BQ=16 WG=64 BKV=16] texels 0 groups 1x8x1"},
    {"portable", "prompt 24 causal", DType::F32,
     "attention_tiled.comp [HEAD_DIM=64 BQ=16 WG=64 BKV=16] texels 0 groups 2x8x1"},
    {"portable", "encoder 256", DType::F32,
     "attention_tiled.comp [HEAD_DIM=64 BQ=16 WG=64 BKV=16] texels 0 groups 16x8x1"},
    {"portable", "heads of 128, 17 queries", DType::F32,
     "attention_tiled.comp [HEAD_DIM=128 BQ=16 WG=64 BKV=8] texels 0 groups 2x4x1"},
    {"portable", "grouped 9 over 3, 24 causal", DType::F32,
     "attention_tiled.comp [HEAD_DIM=64 BQ=16 WG=64 BKV=16] texels 0 groups 2x9x1"},
    {"portable", "decode step over 40 keys", DType::F16,
     "attention_tiled.comp [HEAD_DIM=64 BQ=16 WG=64 BKV=16] texels 0 groups 1x8x1"},
    {"portable", "prompt 24 causal", DType::F16,
     "attention_tiled.comp [HEAD_DIM=64 BQ=16 WG=64 BKV=16] texels 0 groups 2x8x1"},
    {"portable", "encoder 256", DType::F16,
     "attention_tiled.comp [HEAD_DIM=64 BQ=16 WG=64 BKV=16] texels 0 groups 16x8x1"},
    {"portable", "heads of 128, 17 queries", DType::F16,
     "attention_tiled.comp [HEAD_DIM=128 BQ=16 WG=64 BKV=8] texels 0 groups 2x4x1"},
    {"portable", "grouped 9 over 3, 24 causal", DType::F16,
     "attention_tiled.comp [HEAD_DIM=64 BQ=16 WG=64 BKV=16] texels 0 groups 2x9x1"},
    {"nvidia", "decode step over 40 keys", DType::F32,
     "attention_tiled.comp [HEAD_DIM=64 BQ=16 WG=64 BKV=64] texels 0 groups 1x8x1"},
    {"nvidia", "prompt 24 causal", DType::F32,
     "attention_tiled.comp [HEAD_DIM=64 BQ=16 WG=64 BKV=64] texels 0 groups 2x8x1"},
    {"nvidia", "encoder 256", DType::F32,
     "attention_tiled.comp [HEAD_DIM=64 BQ=16 WG=64 BKV=64] texels 0 groups 16x8x1"},
    {"nvidia", "heads of 128, 17 queries", DType::F32,
     "attention_tiled.comp [HEAD_DIM=128 BQ=16 WG=64 BKV=32] texels 0 groups 2x4x1"},
    {"nvidia", "grouped 9 over 3, 24 causal", DType::F32,
     "attention_tiled.comp [HEAD_DIM=64 BQ=16 WG=64 BKV=64] texels 0 groups 2x9x1"},
    {"nvidia", "decode step over 40 keys", DType::F16,
     "attention_tiled.comp [HEAD_DIM=64 BQ=16 WG=64 BKV=64] texels 0 groups 1x8x1"},
    {"nvidia", "prompt 24 causal", DType::F16,
     "attention_tiled.comp [HEAD_DIM=64 BQ=16 WG=64 BKV=64] texels 0 groups 2x8x1"},
    {"nvidia", "encoder 256", DType::F16,
     "attention_tiled.comp [HEAD_DIM=64 BQ=16 WG=64 BKV=64] texels 0 groups 16x8x1"},
    {"nvidia", "heads of 128, 17 queries", DType::F16,
     "attention_tiled.comp [HEAD_DIM=128 BQ=16 WG=64 BKV=32] texels 0 groups 2x4x1"},
    {"nvidia", "grouped 9 over 3, 24 causal", DType::F16,
     "attention_tiled.comp [HEAD_DIM=64 BQ=16 WG=64 BKV=64] texels 0 groups 2x9x1"},
    {"amd", "decode step over 40 keys", DType::F32,
     "attention_tiled.comp [HEAD_DIM=64 BQ=16 WG=64 BKV=64] texels 0 groups 1x8x1"},
    {"amd", "prompt 24 causal", DType::F32,
     "attention_tiled.comp [HEAD_DIM=64 BQ=16 WG=64 BKV=64] texels 0 groups 2x8x1"},
    {"amd", "encoder 256", DType::F32,
     "attention_tiled.comp [HEAD_DIM=64 BQ=16 WG=64 BKV=64] texels 0 groups 16x8x1"},
    {"amd", "heads of 128, 17 queries", DType::F32,
     "attention_tiled.comp [HEAD_DIM=128 BQ=16 WG=64 BKV=32] texels 0 groups 2x4x1"},
    {"amd", "grouped 9 over 3, 24 causal", DType::F32,
     "attention_tiled.comp [HEAD_DIM=64 BQ=16 WG=64 BKV=64] texels 0 groups 2x9x1"},
    {"amd", "decode step over 40 keys", DType::F16,
     "attention_tiled.comp [HEAD_DIM=64 BQ=16 WG=64 BKV=64] texels 0 groups 1x8x1"},
    {"amd", "prompt 24 causal", DType::F16,
     "attention_tiled.comp [HEAD_DIM=64 BQ=16 WG=64 BKV=64] texels 0 groups 2x8x1"},
    {"amd", "encoder 256", DType::F16,
     "attention_tiled.comp [HEAD_DIM=64 BQ=16 WG=64 BKV=64] texels 0 groups 16x8x1"},
    {"amd", "heads of 128, 17 queries", DType::F16,
     "attention_tiled.comp [HEAD_DIM=128 BQ=16 WG=64 BKV=32] texels 0 groups 2x4x1"},
    {"amd", "grouped 9 over 3, 24 causal", DType::F16,
     "attention_tiled.comp [HEAD_DIM=64 BQ=16 WG=64 BKV=64] texels 0 groups 2x9x1"}
};

TEST(AttentionPlan, PinnedForEachDeviceClass) {
  for (const Pin& pin : kPins) {
    SCOPED_TRACE(std::string(pin.device) + ", " + pin.attention + (pin.dtype == DType::F16 ? ", fp16" : ", fp32"));
    EXPECT_EQ(describe(ops::attention_plan(device(pin.device), nullptr, attention(pin.attention, pin.dtype))), pin.want);
  }
  EXPECT_EQ(std::size(kPins), 4u * 2 * std::size(kAttentions));
}

// The kernel: the attention's own, else the tuning file's for its length class, else the
// device class's default; the rows kernel where the tiles cannot run.
TEST(AttentionPlan, KernelFromTheAttentionTheTuningFileThenTheDefault) {
  AttentionProblem p = attention("prompt 24 causal", DType::F32);
  GemmTuning file;
  file.attention[attention_length_class(24)] = AttentionKernel::Rows;
  EXPECT_EQ(ops::attention_plan(lavapipe(), &file, p).kernel, AttentionKernel::Rows);
  p.a.kernel = AttentionKernel::Tiled;
  EXPECT_EQ(ops::attention_plan(lavapipe(), &file, p).kernel, AttentionKernel::Tiled);
  p.a.kernel = AttentionKernel::Direct;
  try {
    ops::attention_plan(portable(), nullptr, p);  // no subgroup arithmetic there
    ADD_FAILURE() << "the direct kernel planned without subgroup arithmetic";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("the direct kernel cannot run"), std::string::npos) << e.what();
  }
  p.a.kernel.reset();
  Capabilities small = portable();
  small.max_workgroup_invocations = small.max_workgroup_size[0] = 32;
  EXPECT_EQ(ops::attention_plan(small, nullptr, p).kernel, AttentionKernel::Rows);
}

// K and V are read as texels on a CPU driver only where every row starts on one.
TEST(AttentionPlan, TexelsOnlyWhereKeysAndValuesLieOnTexels) {
  AttentionProblem p = attention("encoder 256", DType::F32);
  EXPECT_EQ(ops::attention_plan(lavapipe(), nullptr, p).texels.size(), 3u);
  p.k.base = 2;  // a view starting two floats into a texel
  EXPECT_TRUE(ops::attention_plan(lavapipe(), nullptr, p).texels.empty());
  AttentionProblem fp16 = attention("encoder 256", DType::F16);
  fp16.v.bytes -= 2;  // fp16 views must end on a whole texel too
  EXPECT_TRUE(ops::attention_plan(lavapipe(), nullptr, fp16).texels.empty());
}

}  // namespace
}  // namespace vkf::test
