// The decoding step state: a few uint32 words in a buffer the model rewrites before
// each submit, so one recorded decoder step replays at every position (vkf::DecodeStep).
// Shared by step.glsl and the host (include/vkformer/ops.hpp documents the meaning).
// Preprocessor only: valid C++ and GLSL.
#ifndef VKF_DECODE_STEP_H
#define VKF_DECODE_STEP_H

#define DECODE_STEP_WORD 0u       // rows already in the self-attention cache: new rows go here
#define DECODE_POSITION_WORD 1u   // positional-table row of the first new token
#define DECODE_KEY_COUNT_WORD 2u  // keys the new queries attend over (cached + new)
#define DECODE_STATE_WORDS 3u

#endif
