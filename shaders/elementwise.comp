#version 450
// y = a + b, ReLU(a), GELU(a) (erf), GELU(a) (tanh) or SwiGLU (y[r, j] = silu(a[r, j]) *
// a[r, cols + j], a [rows, 2 cols]), chosen by a push constant so one pipeline per storage
// type serves them all.
#extension GL_GOOGLE_include_directive : require
#include "types.glsl"
#include "activations.glsl"

layout(local_size_x = 256) in;
#include "grid.glsl"  // after the local size: it reads gl_WorkGroupSize
layout(std430, set = 0, binding = 0) readonly buffer A { store_t a[]; };
layout(std430, set = 0, binding = 1) readonly buffer B { store_t b[]; };  // OP_ADD only
layout(std430, set = 0, binding = 2) writeonly buffer Y { store_t y[]; };

const uint OP_ADD = 0u, OP_RELU = 1u, OP_GELU = 2u, OP_GELU_TANH = 3u, OP_SWIGLU = 4u;
layout(push_constant) uniform Push {
  uint count, op, cols;  // cols: OP_SWIGLU's output row width
} pc;

void main() {
  uint i = flat_index();
  if (i >= pc.count) return;
  if (pc.op == OP_SWIGLU) {
    const uint r = i / pc.cols, j = i % pc.cols;
    y[i] = store_t(silu(float(a[r * 2u * pc.cols + j])) * float(a[r * 2u * pc.cols + pc.cols + j]));
    return;
  }
  float v = float(a[i]);
  if (pc.op == OP_ADD) v += float(b[i]);
  else if (pc.op == OP_RELU) v = max(v, 0.0);
  else if (pc.op == OP_GELU) v = gelu_erf(v);
  else v = gelu_tanh(v);
  y[i] = store_t(v);
}
