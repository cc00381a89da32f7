#pragma once
// A GEMM as Ops::gemm runs it: the product, its operands' layout and batches, its
// epilogue, the kernel's tiles (the tuner's candidates) and the norms folded into it or
// written beside it. Ops (vkformer/ops.hpp) records it.
#include <cstdint>
#include <optional>
#include <string>

#include "vkformer/blocks.hpp"
#include "vkformer/buffer.hpp"

namespace vkf {

// The normalisation a model's norms compute over a row v of N values:
//   LayerNorm  (v - mean(v)) / sqrt(var(v) + eps) * gamma + beta
//   RMSNorm    v / sqrt(mean(v^2) + eps) * gamma     (Llama's: no centring, no beta)
enum class NormKind : uint8_t { LayerNorm, RMSNorm };

// Gelu: exact (erf), PyTorch's default; Silu: x sigmoid(x), Marian's "swish".
enum class Activation : uint8_t { None, Relu, Gelu, GeluTanh, Silu, Tanh };  // Tanh: BERT's pooler

// Element strides between batches: outer (batch item) and inner (head).
struct Strides {
  uint64_t outer = 0, inner = 0;
};

// Columns [column, N) of a GEMM's result go to a second output, `split_out` of
// Ops::gemm, an [M, N - column] matrix with its own leading dimension (0: packed) and
// batch stride (heads must be 1): a fused QKV projection writes its queries to scratch
// and its keys and values to a cache in one dispatch. C then holds [M, column].
// rows_are_items (one batch item, no heads): row m of the split output belongs to batch
// item m, at the decode step's row (Ops::gemm's step) or row 0 of its view: a batch's
// decode step as one product of a row per sequence, so the weight is read once for all.
struct GemmSplit {
  uint32_t column = 0;  // 0: no split
  uint32_t ld = 0;
  uint64_t stride = 0;
  bool rows_are_items = false;
};

// C = act(alpha * op(A) * op(B) + bias) + residual, row-major. A is [M, K] (or [K, M]
// with trans_a), B is [K, N] (or [N, K] with trans_b, like a Linear weight), C and the
// residual are [M, N], bias is [N]. Leading dimensions of 0 mean packed. There are
// batch * heads products, operand (b, h) at b * strides.outer + h * strides.inner.
// A LayerNorm folded into a product (A not transposed, one batch of heads; at most 4
// rows, the decode step's kernel, B a Linear weight [N, K]): the rows of A (NormOf::A:
// x W^T with x = LN(a)) or of the residual (NormOf::Residual: + LN(r), post-norm's
// residual) are normalised as they are read, with gemm()'s `norm` gamma and beta and
// Gemm::norm_eps, so no layer_norm dispatch runs before the product. Each workgroup
// computes its own rows' statistics first (the cooperative-matrix variant has no fold:
// such a product runs the default table's tiles).
enum class NormOf { None, A, Residual };

// Partial statistics of the rows of a [rows, cols] matrix that a GEMM wrote with it
// (GemmRowStats::out): `parts` partials per row, each 4 floats (count, mean, M2, 0), in
// fp32 whatever the storage type. A later product that folds the LayerNorm of that
// matrix takes its rows' statistics from them (GemmRowStats::in) instead of reading
// whole rows in every workgroup. Only the direct kernel with subgroup arithmetic writes
// and reads them (Ops::gemm_row_stats_parts); any other product ignores `in` (it computes
// the statistics itself) and writes nothing.
struct RowStats {
  BufferView view;    // [rows, parts, 4] floats, descriptor-aligned
  uint32_t parts = 0;
};
struct GemmRowStats {
  std::optional<RowStats> in;     // of the rows the folded norm normalises (A's or the residual's)
  std::optional<BufferView> out;  // room for C's: M * gemm_row_stats_parts(g) * 16 bytes
};

// A GEMM variant: its strategy and parameters (its kernel's specialization constants).
// How a GEMM variant computes C:
//   Tiled (shaders/gemm.comp): BM x BN blocks of C through shared memory, BK of K at a
//     time, TM x TN per invocation. GPUs.
//   Direct (shaders/gemm_direct.comp): straight from global memory, no shared memory or
//     barriers; a workgroup owns BM = TM rows, read as values uniform across it, and BN
//     columns, TN per invocation; BK is 4. CPU drivers (lavapipe), where SIMD lanes
//     gather every non-uniform load.
//   CoopMatNV (shaders/gemm_coopmat.comp): NVIDIA's cooperative matrices, fp16 storage
//     only: BM x BN blocks through shared memory, BK (a multiple of 16) at a time, each
//     32-invocation subgroup a TM x TN tile of 16x16 fp32 accumulators.
enum class GemmStrategy : uint32_t { Tiled, Direct, CoopMatNV };

struct GemmTiles {
  uint32_t bm = 0, bn = 0, bk = 0, tm = 0, tn = 0;
  GemmStrategy strategy = GemmStrategy::Tiled;
  // Split-K (tiled and cooperative-matrix kernels): K in this many runs of whole BK
  // steps, each a workgroup of its own writing fp32 partial sums, then a second pass
  // (gemm_split_k_reduce.comp) adds them in order and applies the epilogue once: a
  // product with few tiles of C (24 rows by 512 columns) fills a large GPU. At most the
  // runs K has; 1: one pass.
  uint32_t split_k = 1;
  // Prefetch (tiled and cooperative-matrix kernels, for products whose A [M, K] and B
  // [N, K] rows start on vec4s: Linear layers): the next BK step's tiles are loaded into
  // registers while this step's are multiplied, hiding a GPU's global-load latency
  // (the cooperative-matrix kernel also reads them as vec4s then). Other products run
  // the same tiles without it. The cooperative-matrix kernel's prefetch designs also pad
  // their shared rows by 8 halves (no bank conflicts) and store C through one 16x16
  // block per subgroup (so 128x128 blocks fit 48 KiB), with or without the prefetch.
  bool prefetch = false;
  // Wide staging (cooperative-matrix prefetch designs, for products whose A and B rows
  // start on 16-byte uvec4s: K, the leading dimensions and offsets multiples of 8): the
  // prefetch reads and stores eight halves at a time instead of four. Other products
  // run the same design's f16vec4 prefetch.
  bool wide = false;
  static constexpr uint32_t kCoopMatSubgroup = 32;  // NVIDIA's subgroup size, which the kernel assumes
  uint32_t invocations() const {
    if (!tm || !tn) return 0;
    return (bm / tm) * (bn / tn) * (strategy == GemmStrategy::CoopMatNV ? kCoopMatSubgroup : 1);
  }
  uint32_t shared_bytes() const {
    if (strategy == GemmStrategy::Tiled) return bk * (bm + bn) * 4;
    if (strategy == GemmStrategy::CoopMatNV && prefetch)  // padded fp16 rows, a 16x16 fp32 block per subgroup
      return (bk + 8) * (bm + bn) * 2 + (bm / tm) * (bn / tn) * 256 * 4;
    if (strategy == GemmStrategy::CoopMatNV) return bk * (bm + bn) * 2 + bm * bn * 4;  // fp16 tiles, fp32 block of C
    return 0;
  }
  // "tiled 32x128x16/4x16", "direct 16x64x4/16x1", "coopmat_nv 64x64x32/32x32", "tiled 32x64x16/4x8 split 4",
  // "coopmat_nv 64x64x32/32x32 split 4 prefetch", "coopmat_nv 128x128x32/64x64 prefetch wide"
  std::string name() const;
  bool operator==(const GemmTiles&) const = default;
};

struct Gemm {
  uint32_t M = 1, N = 1, K = 1;
  bool trans_a = false, trans_b = false;
  float alpha = 1.0f;
  Activation act = Activation::None;
  uint32_t lda = 0, ldb = 0, ldc = 0, ldr = 0;
  uint32_t batch = 1, heads = 1;
  Strides stride_a, stride_b, stride_c, stride_r;
  GemmSplit split;
  NormOf norm_of = NormOf::None;
  float norm_eps = 1e-5f;
  // The folded norm's kind. An RMSNorm's beta must be zeros (the kernels add it as a
  // LayerNorm's).
  NormKind norm_kind = NormKind::LayerNorm;
  // A gated product (SwiGLU: Llama's FFN up projection): B is a Linear weight [2N, K]
  // (trans_b), its first N rows the gate's and the next N the up projection's, and
  // C [M, N] = act(alpha A gate^T + bias[:N]) * (alpha A up^T + bias[N:]) (+ residual):
  // the gate, the up and their product in one dispatch. The bias, when given, has 2N
  // values. Not with a split output or written row statistics; the weight must fit one
  // binding (Ops::fits_one_binding). Tiles whose kernel cannot pair columns (the
  // cooperative-matrix kernel, split-K, an odd TN) give way to the default table's.
  bool glu = false;
  // The tiled kernel's tiles, instead of the tuned or default choice (the tuner's
  // candidates); checked against the device's limits. Products of at most
  // kMaxFoldedNormRows rows run the small-M kernel whatever this says.
  std::optional<GemmTiles> tiles;
  // The small-M kernel reads A and a Linear weight B as storage texel buffers by default
  // on CPU drivers, where it measured 2-2.5x faster, whenever both start and end on whole
  // 16-byte texels (K, rows and offsets multiples of 4 fp32 or 8 fp16 values), and so
  // does the direct kernel wherever its vec4 path runs and both views hold whole texels
  // (1.2-1.4x there); true or false forces the choice (tests), true refused where they
  // cannot be read so (and by the tiled and cooperative-matrix kernels).
  std::optional<bool> texel_weights;
  // The small-M kernel reads A and B through their buffer addresses, 16 bytes a load,
  // by default in fp32 on CPU drivers with Capabilities::hardware_gathers (Xeon,
  // lavapipe: 1.1-1.8x its texel loads), before texels; true or false forces the choice (tests),
  // true refused where the device has no buffer addresses or the operands do not start
  // and run on whole 16-byte units, and together with texel_weights = true.
  std::optional<bool> address_weights;
  // B is a Linear weight [N, K] ([2N, K] gated) in llama.cpp's blocks of this type, as
  // upload_blocks lays it out (vkformer/tensor_io.hpp): each block dequantized in
  // registers. K a multiple of 32, one batch of heads, B not transposed against A's rows
  // (trans_b), the whole weight one binding. The decode-step kernel (at most
  // kMaxFoldedNormRows rows) reads blocks, with every epilogue; larger products are
  // refused by name until the direct and tiled kernels read them (issue 48).
  std::optional<BlockType> b_blocks;
};

// A LayerNorm's weights, [cols] each.
struct NormWeights {
  BufferView gamma, beta;
};

// Ops::gemm_normed's norm of C's rows: its weights (an RMSNorm's beta is not read: pass
// gamma's), where y = LN(C) goes ([M, N], rows N apart), and a ticket counter (one
// uint32, zero before the first dispatch; each dispatch leaves it zero) for the
// decode-step kernel's last subgroup to finish to normalise the rows; without one, a layer_norm
// dispatch follows the product.
struct OutputNorm {
  NormWeights weights;
  BufferView out;
  std::optional<BufferView> tickets;
};

}  // namespace vkf
