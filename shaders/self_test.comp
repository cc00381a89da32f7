#version 450
// y[i] = a * x[i] + i: the smallest kernel that proves the whole path works
// (embedding, #include, specialization and push constants, dispatch, readback).
#extension GL_GOOGLE_include_directive : require
#include "types.glsl"

layout(local_size_x_id = 0) in;

layout(std430, set = 0, binding = 0) readonly buffer X { store_t x[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Y { store_t y[]; };

layout(push_constant) uniform Push {
  uint n;
  float a;
} pc;

void main() {
  uint i = gl_GlobalInvocationID.x;
  if (i >= pc.n) return;
  y[i] = store_t(pc.a * float(x[i]) + float(i));
}
