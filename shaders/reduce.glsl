// Workgroup-wide sum and max through shared memory (portable to every subgroup size).
// Include after declaring local_size_x = WG_SIZE.
#ifndef VKF_REDUCE_GLSL
#define VKF_REDUCE_GLSL

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

#define NEG_INF uintBitsToFloat(0xff800000u)
#define QUIET_NAN uintBitsToFloat(0x7fc00000u)

#endif
