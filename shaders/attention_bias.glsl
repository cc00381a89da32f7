// The additive bias by relative position (Ops::attention's AttentionBias, FLAG_POSITION_BIAS):
// head h's score of key j for the query at position q gains
//   position_bias[h * positions + origin + j - q]     (fp32 [heads, positions])
// a table the host fills for its rule (T5's relative-position buckets, ALiBi's slopes)
// once per model, so that the kernels share one form and the rule's rounding is the
// host's (transformers bins with fp32 logarithms; a GPU's log could move a boundary).
// The index is clamped into the head's row: the host checks that every live query and
// key lies inside it, and lanes past the ends (masked anyway) read a real entry.
// Needs pc.bias_positions, pc.bias_origin and POSITION_BIAS_BINDING.
#ifndef VKF_ATTENTION_BIAS_GLSL
#define VKF_ATTENTION_BIAS_GLSL
layout(std430, set = 0, binding = POSITION_BIAS_BINDING) readonly buffer PositionBias { float position_bias[]; };
float relative_bias(uint h, uint key, uint query_position) {
  const int at = clamp(int(pc.bias_origin) + int(key) - int(query_position), 0, int(pc.bias_positions) - 1);
  return position_bias[h * pc.bias_positions + uint(at)];
}
#endif
