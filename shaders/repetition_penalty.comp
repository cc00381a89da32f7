#version 450
// transformers' repetition penalty (RepetitionPenaltyLogitsProcessor, CTRL's rule): every
// token a sequence has already seen has its logit divided by the penalty when positive
// and multiplied by it when negative, before the next token is chosen. `seen` is a
// bitmap per sequence, [rows, words] uint32 (bit v % 32 of word v / 32: token v); each
// step's input token (`ids`, the token just chosen) joins it here, so a replayed decode
// step needs no host work: invocation 0 of each row sets its bit, and every invocation
// also penalises that token itself (it may read the word before the bit is in it).
// One invocation per logit, rows along y.
#extension GL_GOOGLE_include_directive : require
#include "types.glsl"

layout(local_size_x = 256) in;
layout(std430, set = 0, binding = 0) buffer X { store_t logits[]; };  // [rows, cols]
layout(std430, set = 0, binding = 1) buffer Seen { uint seen[]; };     // [rows, words]
layout(std430, set = 0, binding = 2) readonly buffer Ids { uint ids[]; };  // [rows]
layout(push_constant) uniform Push {
  uint rows, cols, words;
  float penalty;
} pc;

void main() {
  const uint row = gl_WorkGroupID.y, v = gl_GlobalInvocationID.x;
  if (row >= pc.rows) return;
  const uint id = ids[row];
  if (v == 0u && id < pc.cols) atomicOr(seen[row * pc.words + id / 32u], 1u << (id % 32u));
  if (v >= pc.cols) return;
  const bool repeated = v == id || (seen[row * pc.words + v / 32u] & (1u << (v % 32u))) != 0u;
  if (!repeated) return;
  const uint at = row * pc.cols + v;
  const float l = float(logits[at]);
  logits[at] = store_t(l < 0.0 ? l * pc.penalty : l / pc.penalty);
}
