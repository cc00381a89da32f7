// Storage types, chosen per variant by the host:
//   VKF_FP16_STORAGE  buffers hold float16_t (needs 16-bit storage)
//   VKF_RTE_FP16      fp16 results round to nearest even (RoundingModeRTE), where the
//                     device supports it (shaderRoundingModeRTEFloat16); Vulkan leaves
//                     the rounding of fp32 -> fp16 conversions implementation-defined
//                     otherwise.
// Shaders use `store_t` for buffer elements and compute in fp32, so one source serves
// every precision. (fp16 arithmetic is recorded in the capabilities; no kernel uses it.)
#ifndef VKF_TYPES_GLSL
#define VKF_TYPES_GLSL

#ifdef VKF_FP16_STORAGE
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#define store_t float16_t
#define store_vec4 f16vec4
#include "rounding.glsl"
#else
#define store_t float
#define store_vec4 vec4
#endif

#endif
