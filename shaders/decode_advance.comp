#version 450
// The end of a replayed greedy decode step, on the GPU (vkf::Ops::decode_advance):
//   tokens[step, b] = next[b]                       what each sequence produced
//   done[b]        |= stop_at_eos && next[b] == eos  (0 before the first step)
//   input[b]        = done[b] ? eos : next[b]        the next step's input token
//   step, position, key_count += 1                   the decode step state
// One workgroup: every invocation reads the step before invocation 0 advances it.
#extension GL_GOOGLE_include_directive : require

layout(local_size_x = 64) in;
layout(std430, set = 0, binding = 0) readonly buffer Next { uint next_ids[]; };  // [batch]
layout(std430, set = 0, binding = 1) writeonly buffer Input { uint input_ids[]; };  // [batch]
layout(std430, set = 0, binding = 2) buffer Done { uint done[]; };                 // [batch]
layout(std430, set = 0, binding = 3) writeonly buffer Tokens { uint tokens[]; };   // [capacity, batch]
#define STEP_BINDING 4
#include "decode_step.h"
layout(std430, set = 0, binding = STEP_BINDING) buffer DecodeStepState { uint step_state[]; };

layout(push_constant) uniform Push {
  uint batch, capacity, eos_id, stop_at_eos;
} pc;

void main() {
  const uint t = step_state[DECODE_STEP_WORD];
  for (uint b = gl_LocalInvocationID.x; b < pc.batch; b += gl_WorkGroupSize.x) {
    const uint next = next_ids[b];
    if (t < pc.capacity) tokens[t * pc.batch + b] = next;
    const bool finished = done[b] != 0u || (pc.stop_at_eos != 0u && next == pc.eos_id);
    done[b] = finished ? 1u : 0u;
    input_ids[b] = finished ? pc.eos_id : next;
  }
  barrier();  // every invocation has read the step
  if (gl_LocalInvocationID.x == 0u) {
    step_state[DECODE_STEP_WORD] = t + 1u;
    step_state[DECODE_POSITION_WORD] += 1u;
    step_state[DECODE_KEY_COUNT_WORD] += 1u;
  }
}
