// The decoding step counter: a uint in a buffer the host rewrites between submits, so
// one recorded decode step serves every position. Kernels add step * (their per-step
// increments, push constants) to offsets and lengths; with increments of 0 the counter
// (bound to a placeholder) is never read.
#ifndef VKF_STEP_GLSL
#define VKF_STEP_GLSL
#ifndef STEP_BINDING
#error "define STEP_BINDING before including step.glsl"
#endif
layout(std430, set = 0, binding = STEP_BINDING) readonly buffer StepCounter { uint step_counter[]; };
#endif
