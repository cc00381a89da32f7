// Flash-decoding attention, optionally with its output projection: shaders/decode_attention.comp.
#include <cmath>
#include <cstdlib>
#include <string>

#include "attention_bias.hpp"
#include "grid.hpp"
#include "vkformer/ops.hpp"

namespace vkf {

namespace {

// Keys per workgroup. A GPU wants many workgroups at batch 1 (a head of 64 keys each);
// a CPU driver runs workgroups on a few threads, where each stretch more is only more
// work: one stretch of up to 256 keys (the portable profile counts as a GPU).
uint32_t keys_per_workgroup(const Capabilities& c) { return c.type == DeviceType::Cpu ? 256 : 64; }
uint32_t workgroup_size(const Capabilities& c) { return std::min<uint32_t>(64, c.max_workgroup_invocations); }

// Query heads per workgroup (GROUP in the shader): all of a K/V head's group, which then
// loads each key and value once for all of them, at most 8 (their scores and outputs are
// registers) and within shared memory; else the largest divisor of the group that fits.
// Shared memory per workgroup: qs and attn (g heads each), ps, the reduction's scratch and
// flag, and the projection's partial sums (PROJ_LANES + 1 per invocation).
constexpr uint32_t kProjectionLanes = 16;  // PROJ_LANES in the shader
uint32_t heads_per_workgroup(const Capabilities& c, uint32_t kv_group, uint32_t head_dim, uint32_t chunk, uint32_t wg) {
  auto bytes = [&](uint32_t g) {
    return (uint64_t(2) * g * head_dim + uint64_t(g) * chunk + wg + 1 + uint64_t(wg) * (kProjectionLanes + 1)) * 4;
  };
  for (uint32_t g = std::min<uint32_t>(kv_group, 8); g > 1; --g)
    if (kv_group % g == 0 && bytes(g) <= c.max_shared_memory) return g;
  return 1;
}

struct Layout {
  uint32_t splits;
  uint64_t words;  // tickets, stretches, projection shares
};

Layout layout(const Attention& a, uint32_t chunk, uint32_t n) {
  const uint64_t B = a.batch, H = a.heads, S = ops::ceil_div(a.kv_len, chunk);
  return {uint32_t(S), B * H + B + B * H * S * (a.head_dim + 2) + B * H * n};
}

uint32_t u32(uint64_t v, const char* what) {
  if (v > 0xffffffffull) throw Error(std::string("decode_attention: ") + what + " does not fit 32 bits");
  return uint32_t(v);
}

}  // namespace

bool Ops::project_in_decode_attention() const {
  return ctx_.policy().decode_projection == DecodeProjection::Attention;
}

uint64_t Ops::decode_attention_scratch_bytes(const Attention& a, uint32_t projection_n) const {
  return layout(a, keys_per_workgroup(ctx_.capabilities()), projection_n).words * 4;
}

void Ops::decode_attention(CommandList& cl, const Attention& a0, const BufferView& q, const BufferView& k,
                           const BufferView& v, const BufferView& result, const BufferView& scratch,
                           const std::optional<BufferView>& key_padding_mask, const std::optional<DecodeStep>& step,
                           const std::optional<AttentionProjection>& projection,
                           const std::optional<AttentionBias>& bias) {
  Attention a = a0;
  if (a.batch == 0 || a.heads == 0 || a.head_dim == 0 || a.kv_len == 0)
    throw Error("decode_attention: batch, heads, head_dim and kv_len must be at least 1");
  if (a.q_len != 1) throw Error("decode_attention: one query per sequence (q_len 1), got " + std::to_string(a.q_len));
  if (a.causal)
    throw Error("decode_attention: the query is the newest token, so there is nothing to mask causally (causal must be false)");
  if (!fused_attention_fits(a.head_dim))
    throw Error("decode_attention: head_dim " + std::to_string(a.head_dim) + " does not fit this device (at most " +
                std::to_string(kMaxFusedHeadDim) + ")");
  if (step && uint64_t(step->max_step) + 1 > a.kv_len)
    throw Error("decode_attention: a decode step up to " + std::to_string(step->max_step) +
                " needs kv_len of at least " + std::to_string(uint64_t(step->max_step) + 1));
  if (!a.kv_heads) a.kv_heads = a.heads;
  if (a.kv_heads > a.heads || a.heads % a.kv_heads)
    throw Error("decode_attention: kv_heads (" + std::to_string(a.kv_heads) + ") must divide heads (" +
                std::to_string(a.heads) + ")");
  const uint64_t width = uint64_t(a.heads) * a.head_dim, kv_width = uint64_t(a.kv_heads) * a.head_dim;
  if (!a.scale) a.scale = float(1.0 / std::sqrt(double(a.head_dim)));
  if (!a.q_batch_stride) a.q_batch_stride = width;
  if (!a.kv_row_stride) a.kv_row_stride = kv_width;
  if (!a.kv_head_stride) a.kv_head_stride = a.head_dim;
  if (!a.kv_batch_stride) a.kv_batch_stride = a.kv_len * a.kv_row_stride;
  const uint32_t N = projection ? projection->N : 0;
  if (projection && N == 0) throw Error("decode_attention: the projection's N must be at least 1");
  if (!a.o_batch_stride) a.o_batch_stride = projection ? N : width;

  need(q, (a.batch - 1) * a.q_batch_stride + width, "decode_attention", "q");
  const uint64_t kv = (a.batch - 1) * a.kv_batch_stride + (a.kv_heads - 1) * a.kv_head_stride +
                      (a.kv_len - 1) * a.kv_row_stride + a.head_dim;
  need(k, kv, "decode_attention", "k");
  need(v, kv, "decode_attention", "v");
  need(result, (a.batch - 1) * a.o_batch_stride + (projection ? N : width), "decode_attention", "out");
  if (key_padding_mask) need(*key_padding_mask, uint64_t(a.batch) * a.kv_len, "decode_attention", "key_padding_mask");
  if (step) need_step(*step, "decode_attention");
  const auto& caps = ctx_.capabilities();
  const uint32_t chunk = keys_per_workgroup(caps), wg = workgroup_size(caps);
  const Layout lay = layout(a, chunk, N);
  need(scratch, lay.words, "decode_attention", "scratch", DType::F32);  // uint32 words
  const uint64_t align = std::max<uint64_t>(caps.min_storage_buffer_offset_alignment, 1);
  if (scratch.offset % align) throw Error("decode_attention: the scratch must start at a descriptor-aligned offset");

  uint32_t ldw = 0, r_stride = 0;
  if (projection) {
    const AttentionProjection& p = *projection;
    ldw = p.ldw ? p.ldw : u32(width, "ldw");
    if (ldw < width) throw Error("decode_attention: the projection's ldw is smaller than heads * head_dim");
    need(p.weight, uint64_t(N - 1) * ldw + width, "decode_attention", "projection weight");
    if (p.bias) need(*p.bias, N, "decode_attention", "projection bias");
    r_stride = u32(p.residual_batch_stride ? p.residual_batch_stride : N, "residual stride");
    if (p.residual) need(*p.residual, uint64_t(a.batch - 1) * r_stride + N, "decode_attention", "residual");
    if (p.residual_norm) {
      if (!p.residual) throw Error("decode_attention: a residual norm needs a residual");
      need(p.residual_norm->gamma, N, "decode_attention", "residual norm gamma");
      if (p.norm_kind == NormKind::LayerNorm) need(p.residual_norm->beta, N, "decode_attention", "residual norm beta");
    }
  }

  // The query's position: the last key's (kv_len - 1, or a step's key count - 1 <= kv_len - 1).
  if (bias) ops::check_attention_bias(*bias, a.heads, a.kv_len - 1, a.kv_len, "decode_attention");

  constexpr uint32_t KeyMask = 1, Step = 2, Project = 4, Bias = 8, Residual = 16, NormResidual = 32,
                     NormRms = 64, PositionBias = 128;  // FLAG_* in the shader
  uint32_t flags = (key_padding_mask ? KeyMask : 0) | (step ? Step : 0) | (bias ? PositionBias : 0);
  if (projection)
    flags |= Project | (projection->bias ? Bias : 0) | (projection->residual ? Residual : 0) |
             (projection->residual_norm ? NormResidual : 0) |
             (projection->residual_norm && projection->norm_kind == NormKind::RMSNorm ? NormRms : 0);
  struct {
    uint32_t kv_len;
    float scale;
    uint32_t flags, heads, splits;
    uint32_t q_batch_stride, kv_batch_stride, kv_head_stride, kv_row_stride, o_batch_stride;
    uint32_t N, ldw, r_batch_stride;
    float norm_eps;
    uint32_t base_q, base_k, base_v, base_o, base_w, base_b, base_r;
    uint32_t kv_group;  // query heads per K/V head
    uint32_t bias_positions, bias_origin;
  } push{a.kv_len, a.scale, flags, a.heads, lay.splits,
         u32(a.q_batch_stride, "q_batch_stride"), u32(a.kv_batch_stride, "kv_batch_stride"),
         u32(a.kv_head_stride, "kv_head_stride"), u32(a.kv_row_stride, "kv_row_stride"),
         u32(a.o_batch_stride, "o_batch_stride"), N, ldw, r_stride, projection ? projection->norm_eps : 0.0f,
         0, 0, 0, 0, 0, 0, 0, a.heads / a.kv_heads, bias ? bias->positions : 0u, bias ? bias->origin : 0u};
  static_assert(sizeof push == 96, "matches Push in shaders/decode_attention.comp");

  const char* op = "decode_attention";
  const Placed pq = place(q, op), pk = place(k, op), pv = place(v, op), po = place(result, op);
  const Placed pm = place(key_padding_mask ? *key_padding_mask : q, op);
  if (pm.base) throw Error("decode_attention: the key padding mask must start at a descriptor-aligned offset");
  const Placed pt = place(bias ? bias->table : q, op);
  if (pt.base) throw Error("decode_attention: the position bias table must start at a descriptor-aligned offset");
  // Bindings a dispatch does not use get a placeholder it never reads (q).
  Placed pw = pq, pb = pq, pr = pq, pg = pq, pe = pq;
  if (projection) {
    pw = place(projection->weight, op);
    if (projection->bias) pb = place(*projection->bias, op);
    if (projection->residual) pr = place(*projection->residual, op);
    if (projection->residual_norm) {
      pg = place(projection->residual_norm->gamma, op);
      pe = projection->norm_kind == NormKind::RMSNorm ? pg : place(projection->residual_norm->beta, op);  // (not read)
      if (pg.base || pe.base) throw Error("decode_attention: the residual norm's weights must start at a descriptor-aligned offset");
    }
  }
  push.base_q = pq.base;
  push.base_k = pk.base;
  push.base_v = pv.base;
  push.base_o = po.base;
  push.base_w = pw.base;
  push.base_b = pb.base;
  push.base_r = pr.base;
  const uint32_t group = heads_per_workgroup(caps, a.heads / a.kv_heads, a.head_dim, chunk, wg);
  Defines d = {{"HEAD_DIM", std::to_string(a.head_dim)}, {"WG_SIZE", std::to_string(wg)}, {"CHUNK", std::to_string(chunk)}};
  if (group > 1) d.emplace_back("GROUP", std::to_string(group));
  // W's rows as vec4s wherever every row the workgroups read starts on one.
  if (projection && ldw % 4 == 0 && pw.base % 4 == 0 && a.head_dim % 4 == 0) d.emplace_back("PROJECT_VEC4", "1");
  Kernel kern = kernel("decode_attention.comp", d, 13, sizeof push);
  cl.dispatch(kern, {lay.splits, a.heads / group, a.batch},
              {in(pq.view), in(pk.view), in(pv.view), out(po.view), in(pm.view), in(step ? step->state : pq.view),
               inout(scratch), in(pw.view), in(pb.view), in(pr.view), in(pg.view), in(pe.view), in(pt.view)},
              push, "decode_attention");
}

}  // namespace vkf
