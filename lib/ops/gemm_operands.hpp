#pragma once
// How the GEMM kernels read A and B: the decode-step kernel's subgroup path, and
// whether A and B are bound as storage texel buffers (CPU drivers' fast loads) or
// storage buffers. The host-side rules gemm() and gemm_variant() share.
#include <cstdint>

#include "vkformer/buffer.hpp"
#include "vkformer/capabilities.hpp"
#include "vkformer/ops.hpp"

namespace vkf::ops {

// The small-M kernel's subgroup path: gl_SubgroupID and subgroupAdd (basic +
// arithmetic), at one fixed subgroup size, B a Linear weight.
bool small_m_subgroups(const Capabilities& caps, const Gemm& g);

// Where an operand lies as the kernels bind it (Ops::place): its bound view's byte offset
// in its allocation (moved back to the descriptor alignment; allocations start
// texel-aligned: lib/gpu/memory.cpp), its element offset inside that view, the view's
// bytes, and its buffer address where the device has them (0: unknown, taken as aligned).
struct GemmOperand {
  uint64_t start = 0;
  uint32_t base = 0;
  uint64_t bytes = 0;
  uint64_t address = 0;
};

// Whether the small-M kernel reads A and B through buffer addresses (ADDRESS_AB, before
// texels); throws where Gemm::address_weights asks for what cannot be.
bool small_m_addresses(const Capabilities& caps, const Gemm& g, DType dt, const GemmOperand& a,
                       const GemmOperand& b);

// Whether the small-M kernel reads A and B as texels (TEXEL_B); throws where
// Gemm::texel_weights asks for texels that cannot be read.
bool small_m_texels(const Capabilities& caps, const Gemm& g, DType dt, const GemmOperand& a, const GemmOperand& b);

// Whether the direct kernel's vec4 path reads A and B as texels (TEXEL_AB); throws
// likewise.
bool direct_texels(const Capabilities& caps, const Gemm& g, DType dt, bool vec4_nt, const GemmOperand& a,
                   const GemmOperand& b);

}  // namespace vkf::ops
