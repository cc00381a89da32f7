#pragma once
// The choices vkformer otherwise makes by rule for each device class, which a caller may
// make instead: read once when a Context is made (ContextOptions::policy, else the VKF_*
// environment variables below) and never again, so an application sets them per
// context, tests set them without touching the environment, and no kernel reads the
// environment. `vkformer info` prints the policy in force.
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "vkformer/gemm.hpp"

namespace vkf {

// Where a folded decode step's attention output projection runs: a decode-step GEMM
// after the attention (two dispatches, the projection over as many workgroups as its
// columns take) or inside the attention's dispatch (decode_attention with an
// AttentionProjection, one workgroup per head).
enum class DecodeProjection : uint8_t { Gemm, Attention };
const char* decode_projection_name(DecodeProjection p);

struct Policy {
  // Fold each LayerNorm into the GEMMs that read it (decode steps, encoders, a
  // decoder-only prompt). Unset: the device class's rule (Ops::fold_norms_in_decode_steps,
  // Ops::fold_norms_in_encoder). VKF_FOLD_NORMS=0|1.
  std::optional<bool> fold_norms;
  // Gemm unless set: the fused kernel lost to the pair on an H100 at batch 1
  // (docs/performance.md). VKF_DECODE_PROJECTION=gemm|attention.
  DecodeProjection decode_projection = DecodeProjection::Gemm;
  // Tiles for every product the tiled, direct or cooperative-matrix kernel runs (more
  // than Ops::kMaxFoldedNormRows rows), instead of the tuning file's, the built-in tuned
  // table's and the default table's (trying tiles on a new device); a product's own
  // Gemm::tiles still wins. Checked against the device where a product uses them.
  // VKF_GEMM_TILES=[direct:|coopmat_nv:]bm,bn,bk,tm,tn.
  std::optional<GemmTiles> gemm_tiles;
  // The cooperative-matrix kernel with its matrices emulated in shared memory on any
  // device (tests its logic where no NV cooperative matrices are offered; slow): sets
  // Capabilities::cooperative_matrix_emulated. Fixed when the context is made.
  // VKF_EMULATE_COOPMAT=0|1.
  bool emulate_coopmat = false;
  // Ask the driver for each pipeline's statistics (registers, spills) and log them: a
  // diagnostic for kernels on a GPU. Fixed when the context is made. VKF_PIPELINE_STATS=0|1.
  bool pipeline_stats = false;

  // From the VKF_* variables above; a value that is not one of those listed is an Error
  // naming the variable and the value, never a guess.
  static Policy from_environment();
  // Each setting as (name, value): fold_norms "device class" | "on" | "off", ...
  std::vector<std::pair<std::string, std::string>> settings() const;
  bool operator==(const Policy&) const = default;
};

// "bm,bn,bk,tm,tn", optionally after "direct:" or "coopmat_nv:" (VKF_GEMM_TILES's form);
// an Error saying so for anything else.
GemmTiles parse_gemm_tiles(const std::string& text);

}  // namespace vkf
