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

#include "vkformer/error.hpp"
#include "vkformer/files.hpp"
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
                           uint64_t seed, const std::function<void(std::vector<float>&)>& tamper) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  const bool half = precision == DType::F16;
  auto stored = [&](float x) { return half ? half_to_float(float_to_half(x)) : x; };
  std::vector<float> a(uint64_t(M) * K), b(uint64_t(N) * K);
  for (auto& x : a) x = stored(u(rng));
  for (auto& x : b) x = stored(u(rng));
  Buffer ba = upload_floats(ctx, a, precision, "tune A"), bb = upload_floats(ctx, b, precision, "tune B");
  // The output poisoned with NaN, which the kernel never writes: an element it skips fails.
  Buffer bc = upload_floats(ctx, std::vector<float>(uint64_t(M) * N, NAN), precision, "tune C");
  Ops ops(ctx, precision);
  CommandList cl = ctx.command_list();
  ops.gemm(cl, {.M = M, .N = N, .K = K, .trans_b = true, .tiles = tiles}, ba.view(), bb.view(), bc.view());
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
      if (half) error = std::max(0.0, error - std::ldexp(std::fabs(ref), -10));  // the stored result's rounding
      error /= std::max(size, 1e-30);
      if (!(error <= 1e-5)) check.ok = false;
      check.error = std::max(check.error, error);
    }
  return check;
}

}  // namespace vkf
