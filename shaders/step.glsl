// The decoding step state (decode_step.h): bound by kernels that can replay at every
// position of a recorded decoder step. Where a dispatch does not step, a placeholder is
// bound and the kernel never reads it (a push-constant flag says which).
#ifndef VKF_STEP_GLSL
#define VKF_STEP_GLSL
#ifndef STEP_BINDING
#error "define STEP_BINDING before including step.glsl"
#endif
#include "decode_step.h"
layout(std430, set = 0, binding = STEP_BINDING) readonly buffer DecodeStepState { uint step_state[]; };
#endif
