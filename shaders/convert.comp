#version 450
// Storage type conversion: fp32 -> fp16 with FROM_F32, fp16 -> fp32 without.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#include "rounding.glsl"  // FROM_F32: round to nearest even where the device can

layout(local_size_x = 256) in;
#include "grid.glsl"  // after the local size: it reads gl_WorkGroupSize
#ifdef FROM_F32
layout(std430, set = 0, binding = 0) readonly buffer Src { float src[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Dst { float16_t dst[]; };
#else
layout(std430, set = 0, binding = 0) readonly buffer Src { float16_t src[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Dst { float dst[]; };
#endif
#ifdef FROM_F32
#define TO_TYPE float16_t
#else
#define TO_TYPE float
#endif
layout(push_constant) uniform Push { uint count; } pc;

void main() {
  uint i = flat_index();
  if (i < pc.count) dst[i] = TO_TYPE(src[i]);
}
