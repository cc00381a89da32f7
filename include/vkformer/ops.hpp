#pragma once
// The kernel library: every op records its dispatches into a CommandList. Shapes are
// checked against the buffers here, where data enters; kernels trust them.
#include <cstdint>
#include <optional>
#include <vector>

#include "vkformer/context.hpp"
#include "vkformer/error.hpp"
#include "vkformer/gemm.hpp"

namespace vkf {

enum class DType : uint8_t { F32, F16 };
inline uint32_t dtype_bytes(DType t) { return t == DType::F16 ? 2 : 4; }
const char* to_string(DType t);

// y = softmax(scale * x + mask) over the last axis of a [rows, cols] matrix. The
// optional additive mask is [mask_rows, cols]; row r uses mask row
// (r / mask_row_div) % mask_rows (so [B, Lk] padding masks broadcast over heads and
// queries). causal: column c of row r is masked when c > (r % causal_rows) + causal_offset.
// A row whose every entry is masked gives NaN, as torch.softmax does.
struct Softmax {
  uint32_t rows = 1, cols = 1;
  float scale = 1.0f;
  uint32_t mask_rows = 1, mask_row_div = 1;
  bool causal = false;
  uint32_t causal_rows = 1, causal_offset = 0;
};

// y = (x [+ r] - mean) / sqrt(var + eps) * gamma + beta over rows of `cols`; with a
// residual r, the sum x + r can also be written out (pre-norm blocks keep it). With an
// inner norm, x [+ r] is first normalised by it (same eps): y = LN(LN_inner(x)), a
// post-norm decoder's last layer norm and its final norm in one dispatch.
// kind RMSNorm: y = v / sqrt(mean(v^2) + eps) * gamma (Llama's), no mean taken and no
// beta (its view is not read: pass gamma's); an inner norm is of the same kind.
struct LayerNorm {
  uint32_t rows = 1, cols = 1;
  float eps = 1e-5f;
  NormKind kind = NormKind::LayerNorm;
};

// Multi-head scaled dot-product attention, softmax(Q K^T * scale + masks) V, per batch
// item b and head h. Q and O rows are (b, i) with head h at columns [h*d, (h+1)*d) of
// a row of q_row_stride elements; K and V likewise with their own strides, so K/V can
// be a [B, H, Lmax, d] decoding cache (kv_head_stride = Lmax*d, kv_row_stride = d) or
// projections laid out [B, Lk, H*d].
// The fused attention kernels, the tuner's variants (attention_kernel_problem says
// where each runs):
//   Rows    attention.comp: one invocation per query row, keys streamed through shared
//           memory (the first kernel; GPUs with long inputs and few heads).
//   Tiled   attention_tiled.comp: flash-attention-2, a workgroup per block of queries
//           against blocks of keys as small products in shared memory (GPUs).
//   Direct  attention_direct.comp: no shared memory or barriers, lanes over keys with
//           subgroup shuffles and reductions (CPU drivers: lavapipe).
enum class AttentionKernel : uint32_t { Rows, Tiled, Direct };
const char* attention_kernel_name(AttentionKernel k);
std::optional<AttentionKernel> attention_kernel_from_name(const std::string& name);
inline constexpr AttentionKernel kAttentionKernels[] = {AttentionKernel::Rows, AttentionKernel::Tiled,
                                                        AttentionKernel::Direct};

struct Attention {
  uint32_t batch = 1, heads = 1, head_dim = 8;
  // K/V heads: 0 means `heads`; fewer (dividing heads) is grouped-query attention, query
  // head h reading K/V head h / (heads / kv_heads), as Llama-family models store them.
  uint32_t kv_heads = 0;
  uint32_t q_len = 1, kv_len = 1;
  float scale = 0;  // 0: 1/sqrt(head_dim)
  bool causal = false;
  uint32_t causal_offset = 0;  // position of the first query (decoding: tokens already cached)
  // Element strides; 0 means the packed layouts: Q and O [B, L, H*d], K and V
  // [B, L, kv_heads*d].
  uint64_t q_batch_stride = 0, q_row_stride = 0;
  uint64_t kv_batch_stride = 0, kv_head_stride = 0, kv_row_stride = 0;
  uint64_t o_batch_stride = 0, o_row_stride = 0;
  // The fused kernel: unset, the device's choice (its tuning file's for the query
  // length's class, else the default: Direct on CPU drivers where it runs, else Tiled).
  std::optional<AttentionKernel> kernel;
};

// An additive bias on attention scores by relative position, per head: query head h's
// score of key j, for the query at position p (query i of a pass: causal_offset + i; a
// decode step's: its key count - 1), gains
//   table[h * positions + origin + j - p]          table: fp32 [heads, positions]
// One precomputed form for every rule, filled on the host (relative_bias_table): T5's
// relative-position buckets (transformers bins distances with fp32 logarithms, which a
// GPU's approximate log could move across a boundary), ALiBi's per-head slopes. O(heads x
// positions) memory, where a [heads, q, k] tensor would grow with the square. Every live
// (query, key) pair must lie in the table (checked).
struct AttentionBias {
  BufferView table;
  uint32_t positions = 0, origin = 0;  // origin: the column of relative position 0 (j = p)
};

// T5's bucket of a key's position relative to the query's (j - p), as transformers'
// T5Attention._relative_position_bucket computes it (bidirectional: an encoder's; else a
// decoder's, where later keys share bucket 0), in fp32 as it does.
uint32_t t5_relative_bucket(int64_t relative_position, bool bidirectional, uint32_t num_buckets,
                            uint32_t max_distance);
// The AttentionBias table of T5's learned bias `buckets` ([num_buckets, heads], as its
// relative_attention_bias embedding holds it) over queries and keys at positions
// [0, max_positions): [heads, 2 max_positions - 1], origin max_positions - 1.
std::vector<float> t5_relative_bias_table(const std::vector<float>& buckets, uint32_t heads, bool bidirectional,
                                          uint32_t num_buckets, uint32_t max_distance, uint32_t max_positions);
// ALiBi's slopes (BLOOM's, transformers' build_alibi_tensor: powers of 2^(-8 / n) for the
// largest power of two n <= heads, the rest interleaved from 2n), and its table slope_h x
// (j - p) in the same layout (softmax is invariant to a query's constant, so this equals
// BLOOM's slope_h x j).
std::vector<float> alibi_slopes(uint32_t heads);
std::vector<float> alibi_bias_table(uint32_t heads, uint32_t max_positions);

// The output projection a decode_attention can end with, as a Linear after attention:
// out[b, :] = attn[b, :] W^T + bias + residual[b, :], W a Linear weight [N, heads *
// head_dim] (row stride ldw, 0: packed). With residual_norm the residual is LayerNorm-ed
// as it is read (post-norm: the residual stream is the previous sublayer's LN output,
// never written), with norm_eps.
struct AttentionProjection {
  BufferView weight;
  std::optional<BufferView> bias, residual;
  std::optional<NormWeights> residual_norm;
  NormKind norm_kind = NormKind::LayerNorm;  // residual_norm's (an RMSNorm reads no beta)
  uint32_t N = 0, ldw = 0;
  uint64_t residual_batch_stride = 0;  // 0: N
  float norm_eps = 1e-5f;
};

// Rotary position embedding (rotate-half: transformers' Llama), in place on `batch` x
// `rows` vectors of `heads` x head_dim (head_dim = 2 * the table's half), row i of batch
// item b at element b * batch_stride + (row0 + i) * row_stride (row0: 0, or with a
// DecodeStep and rows_from_step the step's cache row), at position position_offset + i
// (with a DecodeStep: the step's position + i), less the sequence's position_shift.
struct Rope {
  uint32_t batch = 1, rows = 1, heads = 1, head_dim = 2;
  uint64_t batch_stride = 0, row_stride = 0;  // 0: packed [batch, rows, heads * head_dim]
  uint32_t position_offset = 0;
  uint32_t positions = 0;  // rows of the table (checked against the positions used)
  bool rows_from_step = false;
};

// The rotary table Ops::rope reads: fp32 [positions, inv_freq.size(), 2], (cos, sin) of
// the angle transformers computes in fp32, (float(p) / position_scale) * inv_freq[j] (its
// linear scaling divides positions), the cosine and sine taken in double.
std::vector<float> rotary_positions(uint32_t positions, const std::vector<float>& inv_freq, float position_scale = 1.0f);

struct Embedding {
  uint32_t rows = 1, vocab = 1, dim = 1;
  float scale = 1.0f;
  uint32_t seq_len = 1, position_offset = 0;
  uint32_t positions = 0;  // rows in the pe table (checked against the positions used)
  // The table [vocab, dim] in llama.cpp's blocks (upload_blocks; dim a multiple of 32, one
  // binding): each row read is dequantized, as dequantize_blocks gives it.
  std::optional<BlockType> table_blocks;
  // Token types (BERT's token_type_embeddings): rows in Ops::embedding's type table, each
  // row's type from its type ids; 0: none.
  uint32_t types = 0;
};

// A decoder step recorded once and replayed at every position: what changes from one
// step to the next lives in a small buffer the model owns and rewrites before each
// submit, never in push constants. `state` holds uint32 words (shaders/decode_step.h):
//   [0] step       rows already in the self-attention cache; this step's rows go there
//   [1] position   row of the positional table for the step's first token
//   [2] key_count  keys the step's queries attend over (cached + new)
// (one set for the whole batch: every sequence advances together). The ops that take a
// DecodeStep use it so:
//   gemm       row m of C is written at row step + m (C is a cache of positions); with a
//              split output only the split part's rows are (C2 is the cache)
//   attention  kv_len is key_count (Attention::kv_len is then the most there can be, for
//              the size checks), causal_offset is key_count - q_len; no padding mask
//              (decode_attention takes one: [batch, kv_len], its rows the cache's capacity)
//   embedding  positions start at `position` instead of Embedding::position_offset
// max_step bounds step and position for the size checks; the host must keep to it.
struct DecodeStep {
  BufferView state;
  uint32_t max_step = 0;

  struct State {
    uint32_t step, position, key_count;
  };
};

// PE[p, 2i] = sin(p / 10000^(2i/dim)), PE[p, 2i+1] = cos(...), computed in double and
// rounded once, as [positions, dim] fp32.
// halves: Marian's layout instead, PE[p, i] = sin(p / 10000^(2i/dim)) for i < ceil(dim/2),
// PE[p, ceil(dim/2) + i] = cos(p / 10000^(2i/dim)).
std::vector<float> sinusoidal_positions(uint32_t positions, uint32_t dim, bool halves = false);

// The end of a replayed greedy decode step, all on the GPU so many steps run per submit:
// next_ids [batch] (argmax) go to row `step` of tokens [capacity, batch]; a sequence
// that produced eos_id is done (done [batch], zeroed before the first step) when
// stop_at_eos, and is fed eos_id from then on; the others are fed what they produced
// (input_ids [batch]); the DecodeStep state advances by one token. All uint32.
struct DecodeAdvance {
  uint32_t batch = 1, capacity = 1, eos_id = 0;
  bool stop_at_eos = true;
};

// Drawing one token per row of logits, as GenerateOptions samples: from
// softmax(logits / temperature), kept to the top_k most likely (0: all), then to the
// smallest most-likely set whose probability reaches top_p (1: all). The uniform number
// of each draw is a hash of (seed, row, the DecodeStep's step): the same seed and step
// give the same token, and a replayed step draws anew at each step.
struct Sampling {
  float temperature = 1;
  uint32_t top_k = 0;
  float top_p = 1;
  uint64_t seed = 0;
  friend bool operator==(const Sampling&, const Sampling&) = default;
};

// The buffers a GEMM reads and writes, laid out as its Gemm says.
struct GemmOperands {
  BufferView a, b, c;                    // A, B (a Linear weight [N, K] with trans_b) and C
  std::optional<BufferView> bias;        // [N] ([2N] for a gated product: gates', then ups')
  std::optional<BufferView> residual;    // [M, N], rows Gemm::ldr apart, added after the activation
  std::optional<DecodeStep> step;        // C's rows (a split output's, with one) start at the step's row
  std::optional<BufferView> split_out;   // columns [split.column, N) of the result (GemmSplit)
  std::optional<NormWeights> norm;       // the folded LayerNorm's gamma and beta (Gemm::norm_of)
  GemmRowStats stats;                    // row statistics read and written (RowStats)
  // B in blocks (Gemm::b_blocks) in a product of more rows than the decode-step kernel
  // takes (a prompt): room for the weight dequantized, [rows, K] of the storage type,
  // which the product then reads. One scratch serves every product of a command list.
  std::optional<BufferView> scratch;
};

namespace ops {
struct GemmPlan;  // lib/ops/gemm_plan.hpp
}

// Kernels for one storage type on one context. Cheap to make; pipelines are shared
// through the context.
class Ops {
 public:
  explicit Ops(Context& ctx, DType dtype = DType::F32);
  DType dtype() const { return dtype_; }

  // C = the product Gemm `g` describes, of the buffers `o` names. Returns the row
  // statistics it wrote to `o.stats.out` (RowStats), or none where this product cannot.
  std::optional<RowStats> gemm(CommandList& cl, const Gemm& g, const GemmOperands& o);
  // A post-norm sublayer's last product: C = the product with its epilogue (bias,
  // activation, residual) as gemm() writes it, [M, N] with rows N apart, then y = LN(C)
  // row by row to norm.out (Gemm::norm_kind's; eps Gemm::norm_eps). The
  // decode-step kernel (M <= kMaxFoldedNormRows, B a Linear weight, subgroup arithmetic) does both
  // in one dispatch where given tickets; elsewhere a layer_norm dispatch follows. One
  // batch of heads; no split output, decode step, folded norm or row statistics.
  void gemm_normed(CommandList& cl, const Gemm& g, const GemmOperands& o, const OutputNorm& norm);
  // The partials per row gemm() writes for `g` (GemmRowStats::out), 0 where it writes
  // none: products of more than kMaxFoldedNormRows rows, one batch of heads, no split
  // output, on the direct kernel with subgroup shuffles and arithmetic (CPU drivers).
  uint32_t gemm_row_stats_parts(const Gemm& g) const;
  // Whether a buffer of `bytes` fits one binding of the device (maxStorageBufferRange):
  // gemm() splits a larger Linear weight by rows, which a gated product cannot be.
  bool fits_one_binding(uint64_t bytes) const;
  // Which kernel variant gemm() runs for `g` on this device ("small_m", or "tiled
  // BMxBNxBK/TMxTN"): reports (bench ops) say what ran.
  std::string gemm_variant(const Gemm& g) const;
  // Whether a product of this shape with B in blocks reads the blocks itself (a Linear
  // weight at any number of rows: the decode-step kernel to kMaxFoldedNormRows, then the
  // tiles' kernel, tiled, direct or cooperative-matrix; on CPU drivers the columns kernel
  // to 32 rows and the direct kernel past that or with a folded norm) rather than needing
  // a copy dequantized into GemmOperands::scratch first (B transposed otherwise).
  bool gemm_reads_blocks(const Gemm& g) const;
  // Whether some product over a weight in blocks needs GemmOperands::scratch on this
  // device (false where the kernels read the blocks at every row count).
  bool blocks_need_scratch() const;
  // The tiles the tiled kernel runs for `g` (products of more than kMaxFoldedNormRows
  // rows): Gemm::tiles, else the device's tuning file's, else the default table's.
  GemmTiles gemm_tiles(const Gemm& g) const;
  GemmTiles default_gemm_tiles(const Gemm& g) const;  // the default table's, tuned or not
  void softmax(CommandList& cl, const Softmax& s, const BufferView& x, const BufferView& y,
               const std::optional<BufferView>& mask = {});
  void layer_norm(CommandList& cl, const LayerNorm& n, const BufferView& x, const BufferView& gamma,
                  const BufferView& beta, const BufferView& y, const std::optional<BufferView>& residual = {},
                  const std::optional<BufferView>& sum_out = {}, const std::optional<NormWeights>& inner = {});
  // key_padding_mask: additive [batch, kv_len] (0 keeps a key, -inf drops it).
  // bias: by relative position (AttentionBias), or none.
  void attention(CommandList& cl, const Attention& a, const BufferView& q, const BufferView& k, const BufferView& v,
                 const BufferView& o, const std::optional<BufferView>& key_padding_mask = {},
                 const std::optional<DecodeStep>& step = {}, const std::optional<AttentionBias>& bias = {});
  // Attention for decoding: one query per sequence (a.q_len = 1) over every key up to
  // a.kv_len, or up to the step's key count with a DecodeStep (the query is the newest
  // token: nothing after it is cached, so no causal mask is needed and a.causal must be
  // false). A key padding mask is [batch, a.kv_len], with a DecodeStep too (a.kv_len is
  // then the cache's capacity: a decoder-only batch's left padding, masked at every
  // step). Split over keys so a GPU is busy at batch 1 (flash-decoding); the stretches
  // are combined by the last workgroup of each head, never by another dispatch. With a
  // projection, `out` is [batch, N] = attn W^T + ..., all in this one dispatch; without,
  // `out` is the attention output laid out as Attention's o. `scratch`:
  // decode_attention_scratch_bytes(a, N) bytes starting at a descriptor-aligned offset,
  // zero before its first use (the kernel leaves it so; one scratch serves any number
  // of dispatches in a list, which run one after another).
  void decode_attention(CommandList& cl, const Attention& a, const BufferView& q, const BufferView& k,
                        const BufferView& v, const BufferView& out, const BufferView& scratch,
                        const std::optional<BufferView>& key_padding_mask = {},
                        const std::optional<DecodeStep>& step = {},
                        const std::optional<AttentionProjection>& projection = {},
                        const std::optional<AttentionBias>& bias = {});
  uint64_t decode_attention_scratch_bytes(const Attention& a, uint32_t projection_n = 0) const;
  // The same as GEMM + softmax + GEMM through `scores` (batch*heads*q_len*kv_len elements).
  void attention_unfused(CommandList& cl, const Attention& a, const BufferView& q, const BufferView& k,
                         const BufferView& v, const BufferView& o, const BufferView& scores,
                         const std::optional<BufferView>& key_padding_mask = {});
  // Whether a fused kernel fits this device for this head dimension (models check it
  // when they load: decoding has no other path).
  bool fused_attention_fits(uint32_t head_dim) const;
  // The fused kernel attention() runs for `a` (see Attention::kernel), and the default
  // one, tuned or not.
  AttentionKernel attention_kernel(const Attention& a) const;
  AttentionKernel default_attention_kernel(const Attention& a) const;
  // Whether decode steps fold each LayerNorm into the GEMM that reads it (Gemm::norm_of)
  // and fuse each attention with its output projection (decode_attention): on GPUs,
  // where every dispatch costs microseconds whatever its size; not on CPU drivers
  // (lavapipe), where dispatches are cheap and the fused step measured ~20% slower
  // (each folded GEMM workgroup recomputes its rows' statistics, behind barriers that
  // lavapipe pays dearly for). VKF_FOLD_NORMS=1 or 0 overrides (measuring both on one device).
  bool fold_norms_in_decode_steps() const;
  // Whether such a step's attention carries its output projection, bias and residual
  // (decode_attention with an AttentionProjection: one dispatch), or leaves them to a
  // decode-step GEMM after it (two dispatches, the projection spread over as many
  // workgroups as the GEMM's columns take where the fused kernel has one per head).
  // A GEMM unless VKF_DECODE_PROJECTION=attention: the fused kernel, one workgroup per
  // head, lost to the pair on an H100 at batch 1 and tied at batch 32 (docs/performance.md).
  bool project_in_decode_attention() const;
  // Whether an encoder folds each LayerNorm into the GEMMs that read it: 5 dispatches per
  // layer instead of 7. On CPU drivers where the direct GEMM passes row statistics on
  // (RowStats; without them each folded GEMM's workgroups re-read their rows, which cost
  // lavapipe ~45%); not on GPUs and the portable profile, where a folded product runs the
  // tiled kernel without split-K (an H100, Transformer-base fp16, 24 tokens: 0.36-1.2 ms
  // each, where the unfolded ones take 10-14 us; the encoder 16.5 ms on the GPU against
  // 0.9 ms). A decoder-only model's prompt folds where both this and decode steps do.
  // VKF_FOLD_NORMS=1 or 0 overrides, as for decode steps.
  bool fold_norms_in_encoder() const;
  static constexpr uint32_t kMaxFusedHeadDim = 128;  // q and o live in registers: 2 * head_dim floats
  // Products of at most this many rows run the decode-step (small-M) kernel, which a
  // decode step's folded norms take; larger ones fold into the tiled or direct kernel.
  static constexpr uint32_t kMaxFoldedNormRows = 4;

  // out[r, :] = table[ids[r], :] * scale + pe[position_offset + r % seq_len, :], with pe
  // an fp32 [positions, dim] table (sinusoidal_positions) or none. ids are uint32; an
  // id >= vocab gives a row of NaN (hosts check ids before they get here).
  // position_shift: uint32 [rows / seq_len], each sequence's positions that many earlier
  // (left padding: a sequence padded by s tokens starts at position 0 at its row s; the
  // padding's rows take position 0).
  void embedding(CommandList& cl, const Embedding& e, const BufferView& ids, const BufferView& table,
                 const std::optional<BufferView>& pe, const BufferView& out, const std::optional<DecodeStep>& step = {},
                 const std::optional<BufferView>& position_shift = {},
                 const std::optional<BufferView>& type_ids = {}, const std::optional<BufferView>& type_table = {});
  // x rotated in place (Rope); table from rotary_positions; position_shift as embedding's.
  // `second`: another tensor rotated in the same dispatch (a layer's keys in its cache
  // beside its queries), with its own heads, strides and rows_from_step and the first's
  // batch, rows, head_dim and positions.
  struct RopeTarget {
    Rope rope;
    BufferView x;
  };
  void rope(CommandList& cl, const Rope& r, const BufferView& x, const BufferView& table,
            const std::optional<DecodeStep>& step = {}, const std::optional<BufferView>& position_shift = {},
            const std::optional<RopeTarget>& second = {});
  void add(CommandList& cl, const BufferView& a, const BufferView& b, const BufferView& y, uint32_t count);
  // SwiGLU (Llama's MLP): y[r, j] = silu(x[r, j]) * x[r, cols + j], x [rows, 2 cols] (gate
  // then up, one projection), y [rows, cols].
  void swiglu(CommandList& cl, const BufferView& x, const BufferView& y, uint32_t rows, uint32_t cols);
  void relu(CommandList& cl, const BufferView& x, const BufferView& y, uint32_t count);
  void gelu(CommandList& cl, const BufferView& x, const BufferView& y, uint32_t count, bool tanh_form = false);
  // transformers' repetition penalty over each row of logits [rows, cols]: a token in the
  // row's `seen` bitmap ([rows, repetition_penalty_words(cols)] uint32, bit v % 32 of
  // word v / 32), or the row's token in `ids` [rows] (uint32, which joins the bitmap),
  // has its logit divided by `penalty` when positive, multiplied when negative.
  void repetition_penalty(CommandList& cl, const BufferView& logits, const BufferView& seen, const BufferView& ids,
                          uint32_t rows, uint32_t cols, float penalty);
  static uint32_t repetition_penalty_words(uint32_t cols) { return (cols + 31) / 32; }
  // Per row of [rows, cols]: index of the largest value (the first on ties), as uint32.
  // flag_non_finite: a row whose largest value is NaN or infinite gets kNonFiniteToken
  // set in its index (sample() gives a row holding one kNonFiniteToken itself).
  static constexpr uint32_t kNonFiniteToken = 0x80000000u;
  void argmax(CommandList& cl, const BufferView& x, const BufferView& indices, uint32_t rows, uint32_t cols,
              bool flag_non_finite = false);
  // Per row: the k largest values, descending, with their uint32 indices (ties: lower index first).
  void top_k(CommandList& cl, const BufferView& x, const BufferView& values, const BufferView& indices,
             uint32_t rows, uint32_t cols, uint32_t k);
  // Per row of [rows, cols]: a token drawn as `s` says, as uint32 (its step from `step`).
  void sample(CommandList& cl, const Sampling& s, const BufferView& x, const BufferView& indices, uint32_t rows,
              uint32_t cols, const DecodeStep& step);
  void decode_advance(CommandList& cl, const DecodeAdvance& a, const BufferView& next_ids, const BufferView& input_ids,
                      const BufferView& done, const BufferView& tokens, const DecodeStep& step);
  // A weight [rows, cols] in blocks (upload_blocks) as values of this storage type, rows
  // x cols of them in `out`: each d (code - offset) (+ m), as dequantize_blocks on the host.
  void dequantize_blocks(CommandList& cl, BlockType type, const BufferView& blocks, const BufferView& out, uint32_t rows,
                         uint32_t cols);
  // Between storage types, for count elements.
  void convert(CommandList& cl, const BufferView& src, DType from, const BufferView& dst, DType to, uint32_t count);

 private:
  Kernel kernel(const char* shader, Defines defines, uint32_t bindings, uint32_t push_bytes,
                std::vector<uint32_t> spec = {},
                std::vector<TexelFormat> texels = {});
  // A view as the kernels bind it: moved back to the device's descriptor alignment,
  // with the difference passed as an element offset (so any element-aligned view works).
  struct Placed {
    BufferView view;
    uint32_t base;
  };
  Placed place(const BufferView& v, const char* op) const;
  // gemm() with, where out_norm is given, the decode-step kernel's NORM_OUT (gemm_normed).
  std::optional<RowStats> record_gemm(CommandList& cl, const Gemm& g, const GemmOperands& o, const OutputNorm* out_norm);
  void check_gemm_views(const Gemm& g, const GemmOperands& o) const;
  bool record(CommandList& cl, const ops::GemmPlan& plan, std::vector<Arg> common, std::vector<Arg> extra);
  void elementwise(CommandList& cl, uint32_t op, const BufferView& a, const BufferView& b, const BufferView& y,
                   uint32_t count);
  void need_step(const DecodeStep& step, const char* op) const;
  void need(const BufferView& v, uint64_t elements, const char* op, const char* what, DType t) const;
  void need(const BufferView& v, uint64_t elements, const char* op, const char* what) const {
    need(v, elements, op, what, dtype_);
  }
  Context& ctx_;
  DType dtype_;
};

}  // namespace vkf
