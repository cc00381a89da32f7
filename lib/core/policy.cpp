#include "vkformer/policy.hpp"

#include <cstdio>
#include <cstdlib>

#include "env.hpp"
#include "vkformer/error.hpp"

namespace vkf {

const char* decode_projection_name(DecodeProjection p) {
  switch (p) {
    case DecodeProjection::Gemm: return "gemm";
    case DecodeProjection::Attention: return "attention";
  }
  return "?";
}

GemmTiles parse_gemm_tiles(const std::string& text) {
  GemmTiles t{};
  const char* at = text.c_str();
  if (text.rfind("direct:", 0) == 0) t.strategy = GemmStrategy::Direct, at += 7;
  else if (text.rfind("coopmat_nv:", 0) == 0) t.strategy = GemmStrategy::CoopMatNV, at += 11;
  int used = 0;
  if (std::sscanf(at, "%u,%u,%u,%u,%u%n", &t.bm, &t.bn, &t.bk, &t.tm, &t.tn, &used) != 5 || at[used] != '\0')
    throw Error("gemm tiles '" + text + "' must be bm,bn,bk,tm,tn, optionally after direct: or coopmat_nv:");
  return t;
}

Policy Policy::from_environment() {
  Policy p;
  p.fold_norms = env_switch("VKF_FOLD_NORMS");
  if (const char* env = std::getenv("VKF_DECODE_PROJECTION")) {
    const std::string v = env;
    if (v != "attention" && v != "gemm")
      throw Error("VKF_DECODE_PROJECTION must be 'attention' or 'gemm', not '" + v + "'");
    p.decode_projection = v == "attention" ? DecodeProjection::Attention : DecodeProjection::Gemm;
  }
  if (const char* env = std::getenv("VKF_GEMM_TILES")) {
    try {
      p.gemm_tiles = parse_gemm_tiles(env);
    } catch (const Error& e) {
      throw Error(std::string("VKF_GEMM_TILES: ") + e.what());
    }
  }
  p.emulate_coopmat = env_switch("VKF_EMULATE_COOPMAT").value_or(false);
  p.pipeline_stats = env_switch("VKF_PIPELINE_STATS").value_or(false);
  return p;
}

std::vector<std::pair<std::string, std::string>> Policy::settings() const {
  return {{"fold_norms", !fold_norms ? "device class" : *fold_norms ? "on" : "off"},
          {"decode_projection", decode_projection_name(decode_projection)},
          {"gemm_tiles", gemm_tiles ? gemm_tiles->name() : "tuned or default"},
          {"emulate_coopmat", emulate_coopmat ? "on" : "off"},
          {"pipeline_stats", pipeline_stats ? "on" : "off"}};
}

}  // namespace vkf
