#pragma once
// What the kernels that read weights in blocks share on the host side.
#include "vkformer/blocks.hpp"
#include "vkformer/capabilities.hpp"
#include "vkformer/kernel.hpp"

namespace vkf::ops {

// Rows interleaved in the device layout (shaders/blocks.glsl: block_at): 16 on CPU
// drivers, whose decode-step kernel (gemm_columns.comp) gives neighbouring rows to
// neighbouring invocations; 1 (row-major) elsewhere, where a subgroup splits one row's K.
uint32_t block_interleave(const Capabilities& caps);

// The block type's defines for shaders/blocks.glsl on this device: QTYPE, Q_CODE_WORDS,
// Q_OFFSET, Q_HIGH_BIT, Q_MIN, Q_INTERLEAVE.
Defines block_defines(BlockType t, const Capabilities& caps);

}  // namespace vkf::ops
