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

// UNROLL: loops whose trip counts are constants (specialization constants included) and
// that index per-invocation arrays. The host defines VKF_UNROLL on GPUs: an H100's
// compiler (driver 580) otherwise kept the GEMMs' accumulator arrays in local memory
// (VKF_PIPELINE_STATS: the tiled kernel's TM x TN floats as local memory, every
// multiply-add a load and a store). CPU drivers unroll what they need themselves, and
// forcing it grows their compile times.
#ifdef VKF_UNROLL
#extension GL_EXT_control_flow_attributes : require
#define UNROLL [[unroll]]
#else
#define UNROLL
#endif

#endif
