#version 450
// A weight in llama.cpp's blocks (blocks.glsl) dequantized into the storage type, a
// block an invocation: a product of more rows than the decode-step kernel takes (a
// prompt) reads the copy as any weight. Each value is d (code - Q_OFFSET) + m rounded
// once (precise: no fused multiply-add), as the host's dequantize_blocks computes it.
#extension GL_GOOGLE_include_directive : require
#include "types.glsl"

layout(local_size_x = 64) in;
#include "grid.glsl"
layout(push_constant) uniform Push { uint blocks, K; } pc;  // blocks: rows * K / 32
#define BLOCKS_BINDING 0
#include "blocks.glsl"
layout(std430, set = 0, binding = 1) writeonly buffer Dst { store_t dst[]; };

void main() {
  const uint i = flat_index();  // block i of the weight read row by row
  if (i >= pc.blocks) return;
  const uint nb = pc.K / 32u;
  const BlockRef r = block_ref(i / nb, i % nb, pc.blocks / nb, nb);
  vec4 q[8];
  block_codes(r, q);
  const vec4 s = block_scales(r);
  UNROLL for (uint j = 0u; j < 8u; ++j)
    UNROLL for (uint c = 0u; c < 4u; ++c) {
      const vec2 dm = j < 4u ? s.xy : s.zw;
      precise float v = dm.x * q[j][c];
#ifdef Q_MIN
      v = v + dm.y;
#endif
      dst[i * 32u + 4u * j + c] = store_t(v);
    }
}
