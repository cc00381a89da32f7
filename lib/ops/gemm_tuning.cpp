// The device's tuning file (where it lives, reading and writing it) and the check every
// candidate passes before the tuner may time it (include/vkformer/gemm_tuning.hpp).
#include "vkformer/gemm_tuning.hpp"

#include "gemm_tiles.hpp"

#include <sys/stat.h>

#include <map>
#include <mutex>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <random>

#include "vkformer/blocks.hpp"
#include "vkformer/error.hpp"
#include "files.hpp"
#include "vkformer/half.hpp"
#include "vkformer/tensor_io.hpp"

namespace vkf {

namespace {

// What a tuning file is for: a file made for anything else is not used.
std::string identity(const Context& ctx, DType precision) {
  const Capabilities& c = ctx.capabilities();
  return std::string("vkformer ") + version() + "; " + c.name + "; vendor " + std::to_string(c.vendor_id) +
         "; device " + std::to_string(c.device_id) + "; driver " + std::to_string(c.driver_version) + " " +
         c.driver_info + "; shared " + std::to_string(c.max_shared_memory) + "; invocations " +
         std::to_string(c.max_workgroup_invocations) + "; " + to_string(precision);
}

}  // namespace

std::string gemm_tuning_path(const Context& ctx, DType precision) {
  const std::string dir = ctx.cache_dir();
  if (dir.empty()) return "";
  return dir + "/gemm-tuning-" + gemm_tuning_file_id(identity(ctx, precision)) + ".json";
}

std::optional<GemmTuning> load_gemm_tuning(const Context& ctx, DType precision) {
  const std::string path = gemm_tuning_path(ctx, precision);
  if (path.empty()) return std::nullopt;
  struct stat st{};
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;  // not tuned: the default table
  auto ignore = [&](const std::string& why) -> std::optional<GemmTuning> {
    ctx.log(LogLevel::Warning, "ignoring GEMM tuning file " + path + ": " + why + " (the default table is used)");
    return std::nullopt;
  };
  if (!S_ISREG(st.st_mode)) return ignore("not a regular file");
  if (st.st_size > (64 << 10)) return ignore("larger than 64 KiB, which no tuning file is");
  std::ifstream f(path, std::ios::binary);
  const std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::string why;
  auto t = parse_gemm_tuning(text, identity(ctx, precision), ctx.capabilities(), precision, &why);
  if (!t) return ignore(why);
  return t;
}

namespace {

std::mutex cache_mutex;
std::map<std::string, std::optional<GemmTuning>> cache;  // tuning file path -> its tuning

}  // namespace

std::optional<GemmTuning> ops::cached_gemm_tuning(const Context& ctx, DType precision) {
  const std::string path = gemm_tuning_path(ctx, precision);
  if (path.empty()) return std::nullopt;
  std::lock_guard lock(cache_mutex);
  auto it = cache.find(path);
  if (it == cache.end()) it = cache.emplace(path, load_gemm_tuning(ctx, precision)).first;
  return it->second;
}

void save_gemm_tuning(const Context& ctx, DType precision, const GemmTuning& tuning) {
  const std::string path = gemm_tuning_path(ctx, precision);
  if (path.empty()) throw Error("the disk cache is off: there is nowhere to keep a tuning file");
  write_file_atomically(path, {format_gemm_tuning(identity(ctx, precision), tuning)});
  std::lock_guard lock(cache_mutex);
  cache[path] = tuning;
}

GemmCheck check_gemm_tiles(Context& ctx, DType precision, uint32_t M, uint32_t N, uint32_t K, const GemmTiles& tiles,
                           uint64_t seed, const std::function<void(std::vector<float>&)>& tamper,
                           std::optional<BlockType> blocks) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  const bool half = precision == DType::F16;
  auto stored = [&](float x) { return half ? half_to_float(float_to_half(x)) : x; };
  std::vector<float> a(uint64_t(M) * K), b(uint64_t(N) * K);
  for (auto& x : a) x = stored(u(rng));
  for (auto& x : b) x = blocks ? u(rng) : stored(u(rng));
  const Gemm g{.M = M, .N = N, .K = K, .trans_b = true, .tiles = tiles, .b_blocks = blocks};
  Ops ops(ctx, precision);
  Buffer ba = upload_floats(ctx, a, precision, "tune A"), bb;
  std::optional<Buffer> scratch;
  if (blocks) {
    // B in blocks: the reference takes the weight as the kernel sees it, dequantized on
    // the host, and rounded to the storage type where it passes through it (the
    // cooperative-matrix kernel's fp16 tiles, or a dequantized copy).
    const std::vector<uint8_t> q = quantize_blocks(*blocks, b);
    b = dequantize_blocks(*blocks, q);
    const bool reads = ops.gemm_reads_blocks(g);
    if (!reads || tiles.strategy == GemmStrategy::CoopMatNV)
      for (auto& x : b) x = stored(x);
    bb = upload_blocks(ctx, *blocks, q, N, K, "tune B blocks");
    if (!reads) scratch = ctx.buffer(uint64_t(N) * K * dtype_bytes(precision), "tune B dequantized");
  } else {
    bb = upload_floats(ctx, b, precision, "tune B");
  }
  // The output poisoned with NaN, which the kernel never writes: an element it skips fails.
  Buffer bc = upload_floats(ctx, std::vector<float>(uint64_t(M) * N, NAN), precision, "tune C");
  CommandList cl = ctx.command_list();
  ops.gemm(cl, g,
           {.a = ba.view(), .b = bb.view(), .c = bc.view(),
            .scratch = scratch ? std::optional(scratch->view()) : std::nullopt});
  cl.submit();
  std::vector<float> c = download_floats(ctx, bc, uint64_t(M) * N, precision);
  if (tamper) tamper(c);
  GemmCheck check{.ok = true};
  for (uint32_t m = 0; m < M; ++m)
    for (uint32_t n = 0; n < N; ++n) {
      double ref = 0, size = 0;
      for (uint32_t k = 0; k < K; ++k) {
        const double p = double(a[uint64_t(m) * K + k]) * b[uint64_t(n) * K + k];
        ref += p;
        size += std::fabs(p);
      }
      const double got = c[uint64_t(m) * N + n];
      if (!std::isfinite(got)) {  // an unwritten (NaN-poisoned) or overflowed element
        check.ok = false;
        check.error = INFINITY;
        continue;
      }
      double error = std::fabs(got - ref);
      // The stored result's rounding: half an ulp (2^-11 of |ref|, with 2x margin), and below
      // 2^-14, where halves are subnormal and 2^-24 apart, half of that spacing (a product
      // of ~1e-6 at K = 1 is otherwise off by 3% of itself: seed 3907406475 found one).
      if (half) error = std::max(0.0, error - std::ldexp(std::fabs(ref), -10) - std::ldexp(1.0, -25));
      error /= std::max(size, 1e-30);
      if (!(error <= 1e-5)) check.ok = false;
      check.error = std::max(check.error, error);
    }
  return check;
}

AttentionCheck check_attention_kernel(Context& ctx, DType precision, AttentionKernel kernel, uint32_t head_dim,
                                      uint64_t seed, const std::function<void(std::vector<float>&)>& tamper) {
  constexpr uint32_t B = 2, H = 4, KVH = 2, Lq = 19, Lk = 37, kept = 30;  // sequence 1 keeps its first `kept` keys
  const uint32_t d = head_dim, W = H * d, KW = KVH * d;
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  const bool half = precision == DType::F16;
  auto stored = [&](float x) { return half ? half_to_float(float_to_half(x)) : x; };
  std::vector<float> q(uint64_t(B) * Lq * W), k(uint64_t(B) * Lk * KW), v(k.size()), mask(uint64_t(B) * Lk, 0.0f);
  for (auto* x : {&q, &k, &v})
    for (auto& e : *x) e = stored(2 * u(rng));
  for (uint32_t j = kept; j < Lk; ++j) mask[Lk + j] = -INFINITY;
  const Attention a{.batch = B, .heads = H, .head_dim = d, .kv_heads = KVH, .q_len = Lq, .kv_len = Lk,
                    .causal = true, .causal_offset = Lk - Lq, .kernel = kernel};
  Buffer bq = upload_floats(ctx, q, precision, "check q"), bk = upload_floats(ctx, k, precision, "check k");
  Buffer bv = upload_floats(ctx, v, precision, "check v"), bm = upload_floats(ctx, mask, precision, "check mask");
  // The output poisoned with NaN, which the kernel never writes here (every query keeps a key).
  Buffer bo = upload_floats(ctx, std::vector<float>(q.size(), NAN), precision, "check o");
  Ops ops(ctx, precision);
  CommandList cl = ctx.command_list();
  ops.attention(cl, a, bq.view(), bk.view(), bv.view(), bo.view(), bm.view());
  cl.submit();
  std::vector<float> o = download_floats(ctx, bo, q.size(), precision);
  if (tamper) tamper(o);
  AttentionCheck check{.ok = true};
  const double scale = 1.0 / std::sqrt(double(d));
  std::vector<double> s(Lk);
  for (uint32_t b = 0; b < B; ++b)
    for (uint32_t h = 0; h < H; ++h)
      for (uint32_t i = 0; i < Lq; ++i) {
        const uint32_t g = h / (H / KVH);
        double m = -INFINITY, sum = 0;
        for (uint32_t j = 0; j < Lk; ++j) {
          double dot = 0;
          for (uint32_t e = 0; e < d; ++e)
            dot += double(q[(uint64_t(b) * Lq + i) * W + h * d + e]) * k[(uint64_t(b) * Lk + j) * KW + g * d + e];
          s[j] = (j > i + a.causal_offset || std::isinf(mask[b * Lk + j])) ? -INFINITY : dot * scale;
          m = std::max(m, s[j]);
        }
        for (auto& x : s) sum += x = std::isinf(x) ? 0.0 : std::exp(x - m);
        for (uint32_t e = 0; e < d; ++e) {
          double ref = 0, size = 0;
          for (uint32_t j = 0; j < Lk; ++j) {
            const double vv = v[(uint64_t(b) * Lk + j) * KW + g * d + e];
            ref += s[j] / sum * vv;
            size += s[j] / sum * std::fabs(vv);
          }
          const double got = o[(uint64_t(b) * Lq + i) * W + h * d + e];
          if (!std::isfinite(got)) {  // unwritten (NaN-poisoned)
            check.ok = false;
            check.error = INFINITY;
            continue;
          }
          double error = std::fabs(got - ref);
          if (half) error = std::max(0.0, error - std::ldexp(std::fabs(ref), -10));
          error /= std::max(size, 1e-30);
          if (!(error <= 2e-5)) check.ok = false;
          check.error = std::max(check.error, error);
        }
      }
  return check;
}

}  // namespace vkf
