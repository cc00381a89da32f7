// GEMM push-constant flag bits and kernel constants, shared by the GLSL kernels
// (gemm_common.glsl, gemm_small_m.comp) and their host code (lib/ops/gemm.cpp): both
// include this file, so they cannot disagree. Preprocessor only: valid C++ and GLSL.
#ifndef VKF_GEMM_FLAGS_H
#define VKF_GEMM_FLAGS_H

#define GEMM_FLAG_TRANS_A 1u
#define GEMM_FLAG_TRANS_B 2u
#define GEMM_FLAG_BIAS 4u
#define GEMM_FLAG_RESIDUAL 8u
#define GEMM_ACT_SHIFT 4u  // 3 bits: GEMM_ACT_* (the order of vkf::Activation)
#define GEMM_ACT_MASK 7u
#define GEMM_ACT_NONE 0u
#define GEMM_ACT_RELU 1u
#define GEMM_ACT_GELU 2u       // erf form
#define GEMM_ACT_GELU_TANH 3u  // tanh approximation
#define GEMM_ACT_SILU 4u       // x sigmoid(x): Marian's "swish"
#define GEMM_ACT_TANH 5u       // BERT's pooler
#define GEMM_FLAG_STEP_ROWS 128u  // C's rows start at the decode step's row (DECODE_STEP_WORD)
// LayerNorm folded into the decode-step kernel (gemm_small_m.comp): the rows of A, or
// of the residual, are normalised with the norm's gamma and beta as they are read.
#define GEMM_FLAG_NORM_A 256u
#define GEMM_FLAG_NORM_R 512u
// The direct kernel with ROW_STATS (gemm_direct.comp): a folded norm's row statistics
// from partials another GEMM wrote (binding 9), and this product's own partials of C's
// rows written out (binding 10), so the next folded norm need not re-read whole rows.
#define GEMM_FLAG_STATS_IN 1024u
#define GEMM_FLAG_STATS_OUT 2048u
// The folded norm is an RMSNorm (Llama): no mean taken out, the rows scaled by
// 1 / sqrt(mean(x^2) + eps) = 1 / sqrt(var + mean^2 + eps), from the same statistics a
// LayerNorm's fold computes; its beta is zeros.
#define GEMM_FLAG_NORM_RMS 4096u
// A gated product (SwiGLU, Llama's FFN): op(B) = B^T has 2N columns, the gate's [0, N)
// and the up projection's [N, 2N); C [M, N] = act(gate) * up, each with its half of the
// bias. Every invocation holds its outputs' gate and up sums side by side: the kernels
// give the first half of an invocation's columns to gates and the second to the same
// outputs' ups, so their TN (COLS) must be even.
#define GEMM_FLAG_GLU 8192u
// GemmSplit::rows_are_items: row m of the split output is batch item m's (at the step's row).
#define GEMM_FLAG_SPLIT_ITEMS 16384u

// gemm_small_m.comp: products with at most this many rows of C take the decode-step
// kernel, which keeps MAX_M accumulators per invocation (and a folded norm one row
// per vec4 component: 4 at most).
#define GEMM_SMALL_M_MAX_M 4u

// gemm_columns.comp (CPU drivers' products over blocks): at most this many rows a
// workgroup, each invocation holding 2 x COLS accumulators a row (a batch of 32 beams or
// sentences); more rows run in chunks of this many.
#define GEMM_COLUMNS_MAX_M 32u

#endif
