#pragma once
// What the kernels that read weights in blocks share on the host side.
#include "vkformer/blocks.hpp"
#include "vkformer/kernel.hpp"

namespace vkf::ops {

// The block type's defines for shaders/blocks.glsl: QTYPE, Q_CODE_WORDS, Q_OFFSET,
// Q_HIGH_BIT, Q_MIN.
Defines block_defines(BlockType t);

}  // namespace vkf::ops
