// With VKF_RTE_FP16, every fp16 value this shader produces rounds to nearest even
// (SPIR-V RoundingModeRTE for 16-bit floats, SPV_KHR_float_controls). Included by every
// shader that stores fp16 (through types.glsl, or directly).
#ifndef VKF_ROUNDING_GLSL
#define VKF_ROUNDING_GLSL
#ifdef VKF_RTE_FP16
#extension GL_EXT_spirv_intrinsics : require
// Execution mode 4462 = RoundingModeRTE (operand: bit width 16); capability 4467 = RoundingModeRTE.
spirv_execution_mode(extensions = ["SPV_KHR_float_controls"], capabilities = [4467], 4462, 16);
#endif
#endif
