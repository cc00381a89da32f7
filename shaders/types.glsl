// Storage and arithmetic types, chosen per variant by the host:
//   VKF_FP16_STORAGE  buffers hold float16_t (needs 16-bit storage)
//   VKF_FP16_MATH     arithmetic in float16_t (needs shaderFloat16)
// Shaders use `store_t` for buffer elements and `acc_t` for accumulation, so one
// source serves every precision.
#ifndef VKF_TYPES_GLSL
#define VKF_TYPES_GLSL

#if defined(VKF_FP16_STORAGE) || defined(VKF_FP16_MATH)
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#endif

#ifdef VKF_FP16_STORAGE
#define store_t float16_t
#define store_vec4 f16vec4
#else
#define store_t float
#define store_vec4 vec4
#endif

#ifdef VKF_FP16_MATH
#define math_t float16_t
#else
#define math_t float
#endif

// Accumulation is always fp32: fp16 sums lose digits after a few hundred terms.
#define acc_t float

#endif
