// Workgroup-wide sum and max through shared memory (portable to every subgroup size).
// Include after declaring local_size_x = WG_SIZE.
#ifndef VKF_REDUCE_GLSL
#define VKF_REDUCE_GLSL

#ifdef SUBGROUP_REDUCE
// The workgroup is exactly one subgroup (the host checks the subgroup size is fixed):
// no shared memory and no barriers. On lavapipe a barrier switches coroutines for
// every SIMD chunk of the workgroup, which costs more than the arithmetic.
#extension GL_KHR_shader_subgroup_arithmetic : require
float workgroup_sum(float v) { return subgroupAdd(v); }
float workgroup_max(float v) { return subgroupMax(v); }
#else

shared float reduce_scratch[WG_SIZE];

float workgroup_sum(float v) {
  const uint tid = gl_LocalInvocationID.x;
  reduce_scratch[tid] = v;
  barrier();
  for (uint s = WG_SIZE / 2; s > 0; s >>= 1) {
    if (tid < s) reduce_scratch[tid] += reduce_scratch[tid + s];
    barrier();
  }
  float r = reduce_scratch[0];
  barrier();
  return r;
}

float workgroup_max(float v) {
  const uint tid = gl_LocalInvocationID.x;
  reduce_scratch[tid] = v;
  barrier();
  for (uint s = WG_SIZE / 2; s > 0; s >>= 1) {
    if (tid < s) reduce_scratch[tid] = max(reduce_scratch[tid], reduce_scratch[tid + s]);
    barrier();
  }
  float r = reduce_scratch[0];
  barrier();
  return r;
}

#endif

#define NEG_INF uintBitsToFloat(0xff800000u)
#define QUIET_NAN uintBitsToFloat(0x7fc00000u)

#endif
