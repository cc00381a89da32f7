// The tiled GEMM's variants as data, their validity, the tuning file and the check that
// every candidate passes before the tuner may time it (include/vkformer/gemm_tuning.hpp).
#include "vkformer/gemm_tuning.hpp"

#include <sys/stat.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "vkformer/error.hpp"
#include "vkformer/files.hpp"
#include "vkformer/half.hpp"
#include "vkformer/tensor_io.hpp"

namespace vkf {

std::string GemmTiles::name() const {
  return "tiled " + std::to_string(bm) + "x" + std::to_string(bn) + "x" + std::to_string(bk) + "/" +
         std::to_string(tm) + "x" + std::to_string(tn);
}

uint32_t gemm_row_class(uint32_t rows) {
  uint32_t c = 0;
  while (rows > kGemmRowClassLimits[c]) ++c;
  return c;
}

std::string gemm_row_class_name(uint32_t row_class) {
  if (row_class + 1 < kGemmRowClassLimits.size()) return "M <= " + std::to_string(kGemmRowClassLimits[row_class]);
  return "M > " + std::to_string(kGemmRowClassLimits[row_class - 1]);
}

std::string gemm_tiles_problem(const Capabilities& caps, const GemmTiles& t) {
  if (!t.bm || !t.bn || !t.bk || !t.tm || !t.tn) return "a tile size is 0";
  if (t.bk % 4) return "BK " + std::to_string(t.bk) + " is not a multiple of 4 (the kernel reads k in vec4s)";
  if (t.bm % t.tm || t.bn % t.tn) return "TM must divide BM and TN divide BN";
  if (t.tm * t.tn > 256) return "more than 256 accumulators per invocation";
  if (t.invocations() > caps.max_workgroup_invocations || t.invocations() > caps.max_workgroup_size[0])
    return std::to_string(t.invocations()) + " invocations, more than the device's workgroup allows";
  if (t.shared_bytes() > caps.max_shared_memory)
    return std::to_string(t.shared_bytes()) + " bytes of shared memory, more than the device's " +
           std::to_string(caps.max_shared_memory);
  return "";
}

std::vector<GemmTiles> gemm_tile_candidates(const Capabilities& caps) {
  // Short wide tiles (CPU drivers run a workgroup on one core, SIMD across invocations:
  // empty rows cost as much as full ones); square 64-128 blocks with 4x4 to 8x8 per
  // invocation (GPUs); small ones within 16 KiB and 128 invocations (mobile).
  const GemmTiles all[] = {
      {32, 64, 16, 4, 8},    {32, 128, 16, 4, 16},  {32, 128, 32, 4, 16}, {32, 256, 16, 4, 16}, {64, 64, 16, 4, 4},
      {64, 64, 16, 4, 8},    {64, 128, 16, 4, 16},  {64, 128, 16, 8, 8},  {128, 64, 16, 8, 8},  {128, 128, 16, 8, 8},
      {128, 128, 16, 8, 16}, {64, 32, 16, 4, 4},    {32, 32, 8, 4, 4},    {128, 64, 32, 8, 8},
  };
  std::vector<GemmTiles> valid;
  for (const GemmTiles& t : all)
    if (gemm_tiles_problem(caps, t).empty()) valid.push_back(t);
  return valid;
}

namespace {

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

std::string hex(uint64_t v) {
  char b[17];
  std::snprintf(b, sizeof b, "%016llx", static_cast<unsigned long long>(v));
  return b;
}

// What a tuning file is for: a file made for anything else is not used.
std::string identity(const Context& ctx, DType precision) {
  const Capabilities& c = ctx.capabilities();
  return std::string("vkformer ") + version() + "; " + c.name + "; vendor " + std::to_string(c.vendor_id) +
         "; device " + std::to_string(c.device_id) + "; driver " + std::to_string(c.driver_version) + " " +
         c.driver_info + "; shared " + std::to_string(c.max_shared_memory) + "; invocations " +
         std::to_string(c.max_workgroup_invocations) + "; " + to_string(precision);
}

nlohmann::json classes_json(const GemmTuning& t) {
  nlohmann::json j = nlohmann::json::object();
  for (uint32_t c = 0; c < t.tiles.size(); ++c)
    if (const auto& x = t.tiles[c]) j[std::to_string(c)] = {x->bm, x->bn, x->bk, x->tm, x->tn};
  return j;
}

}  // namespace

std::string gemm_tuning_path(const Context& ctx, DType precision) {
  const std::string dir = ctx.cache_dir();
  if (dir.empty()) return "";
  return dir + "/gemm-tuning-" + hex(fnv1a(identity(ctx, precision))) + ".json";
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
  std::ifstream f(path);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(f);
  } catch (const std::exception&) {
    return ignore("not valid JSON");
  }
  if (!j.is_object() || j.value("schema", nlohmann::json()) != "vkformer-gemm-tuning/1") return ignore("not a tuning file");
  if (j.value("identity", nlohmann::json()) != identity(ctx, precision))
    return ignore("made for another device, driver, vkformer or precision");
  const nlohmann::json classes = j.value("classes", nlohmann::json());
  if (!classes.is_object() || j.value("checksum", nlohmann::json()) != hex(fnv1a(classes.dump())))
    return ignore("its checksum does not match");
  GemmTuning t;
  for (const auto& [key, value] : classes.items()) {
    if (key.size() != 1 || key[0] < '0' || key[0] >= char('0' + t.tiles.size())) return ignore("an unknown row class");
    if (!value.is_array() || value.size() != 5) return ignore("tiles must be [bm, bn, bk, tm, tn]");
    for (const auto& v : value)
      if (!v.is_number_unsigned() || v.get<uint64_t>() > 4096) return ignore("a tile size is not a small integer");
    const GemmTiles tiles{value[0], value[1], value[2], value[3], value[4]};
    if (const std::string problem = gemm_tiles_problem(ctx.capabilities(), tiles); !problem.empty())
      return ignore(tiles.name() + ": " + problem);
    t.tiles[key[0] - '0'] = tiles;
  }
  return t;
}

void save_gemm_tuning(const Context& ctx, DType precision, const GemmTuning& tuning) {
  const std::string path = gemm_tuning_path(ctx, precision);
  if (path.empty()) throw Error("the disk cache is off: there is nowhere to keep a tuning file");
  const nlohmann::json classes = classes_json(tuning);
  const nlohmann::json j = {{"schema", "vkformer-gemm-tuning/1"},
                            {"identity", identity(ctx, precision)},
                            {"classes", classes},
                            {"checksum", hex(fnv1a(classes.dump()))}};
  write_file_atomically(path, {j.dump(2), "\n"});
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
