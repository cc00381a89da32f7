#pragma once
// Encoder-decoder models: load once, then generate or score from any number of
// sessions (one per thread). Architectures: "torch-seq2seq" (PyTorch's nn.Transformer
// with token embeddings, sinusoidal positions and a generator; tools/seq2seq.py defines
// it, tools/export.py writes a model directory), and Hugging Face directories as
// save_pretrained writes them: "marian" (MarianMTModel, OPUS-MT) and "bart"
// (BartForConditionalGeneration).
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "vkformer/context.hpp"
#include "vkformer/model_files.hpp"
#include "vkformer/gemm_tuning.hpp"
#include "vkformer/ops.hpp"

namespace vkf {

// The architecture of a model directory: the "architecture" its config.json names
// ("torch-seq2seq", "torch-patch-forecaster") or, for a Hugging Face directory, its
// "model_type" ("marian", "bart"); or an Error that says what is wrong with the
// directory (missing, a file, no config.json, neither field).
std::string model_architecture(const ModelFiles& files);

// Which stacks a transformer has: an encoder alone (BERT, ViT; the forecaster's is
// its own class), a decoder alone reading prompts (GPT-2, Llama), or both, the decoder
// attending to the encoder's output (nn.Transformer, Marian, BART).
enum class ModelKind : uint8_t { EncoderOnly, DecoderOnly, EncoderDecoder };
const char* model_kind_name(ModelKind k);  // "encoder-only", "decoder-only", "encoder-decoder"

// What a model directory holds, by its family in vkformer's registry: a model that
// generates (Model::load, Session), a patch forecaster (Forecaster::load), an encoder-only
// model (Model::load, Encoder: BERT), or a name no family has (Model::load then says
// which it knows).
enum class ModelTask { Generator, Forecaster, Encoder, Unknown };
ModelTask model_task(const ModelFiles& files);
// The families this vkformer runs, as its messages name them ("torch-seq2seq, and
// Hugging Face model_type marian, bart, ..."), from the registry.
std::string supported_model_families();

// What a Hugging Face model's generation_config.json (or config.json) asks of
// generate(), read at load; GenerateOptions::defaults turns it into options.
struct GenerationDefaults {
  uint32_t num_beams = 1;
  float length_penalty = 1.0f;
  int early_stopping = 0;  // 0: false (stop when the best unfinished beam cannot win), 1: true, -1: "never"
  uint32_t max_length = 20, min_length = 0, no_repeat_ngram_size = 0;  // lengths count the start token
  uint32_t min_new_tokens = 0, num_return_sequences = 1;
  // do_sample: sampling by default, at these settings (transformers' defaults: 1, 50, 1).
  bool do_sample = false;
  float temperature = 1.0f, top_p = 1.0f;
  uint32_t top_k = 50;
  bool max_length_given = false;  // a decoder-only model's max_length (prompt included) is then its default
  float repetition_penalty = 1.0f;
  std::vector<std::vector<uint32_t>> bad_words_ids;
  std::optional<uint32_t> forced_bos_id, forced_eos_id;
};

struct ModelConfig {
  std::string architecture;
  uint32_t d_model = 0, nhead = 0, num_encoder_layers = 0, num_decoder_layers = 0, dim_feedforward = 0;
  Activation activation = Activation::Relu;
  bool norm_first = false;
  float layer_norm_eps = 1e-5f;
  uint32_t src_vocab_size = 0, tgt_vocab_size = 0, max_position = 0;
  bool scale_embedding = false;
  // pad_id marks padded source tokens; bos_id is the decoder's first input (a Hugging
  // Face model's decoder_start_token_id); eos_id ends a sequence.
  uint32_t pad_id = 0, bos_id = 1, eos_id = 2;
  // A decoder-only model's other tokens that end an output as eos_id does, unless
  // GenerateOptions::stop_at_eos is off (Llama 3's list of eos_token_id after the
  // first; a GGUF file's end-of-turn and end-of-message ids).
  std::vector<uint32_t> more_eos_ids;

  // Where a model family departs from nn.Transformer (its loader sets these):
  enum class Positions : uint8_t {
    Interleaved,  // sinusoidal, sin and cos interleaved (torch-seq2seq)
    Halves,       // sinusoidal, sin in the first half of the channels, cos in the second (Marian)
    Learned,      // a table in the file, one per stack (BART: rows offset by 2)
    Rotary,       // none added to the embedding: queries and keys rotated (Llama's RoPE, rotate-half)
  };
  Positions positions = Positions::Interleaved;
  bool embedding_norm = false;  // LayerNorm after embedding + positions (BART's layernorm_embedding)
  bool final_norms = true;      // LayerNorm after the last encoder and decoder layers (nn.Transformer)
  bool hugging_face = false;    // generate() as transformers does it (its beam scorer, its logits processors)
  // Which stacks the model has (ModelKind): a decoder-only model (GPT-2, Llama) has no
  // encoder and no cross-attention; its decoder stack reads the prompt
  // (Session::generate's sources are prompts) and continues it.
  ModelKind kind = ModelKind::EncoderDecoder;
  GenerationDefaults generation;  // Hugging Face models only
  // The kind of every norm (Llama's: RMSNorm, no mean, no beta).
  NormKind norm_kind = NormKind::LayerNorm;
  // Llama's departures: a gated feed-forward
  // block (down(act(gate(x)) * up(x)): SwiGLU with activation Silu; gate and up one
  // projection [2 FFN, D]), fewer K/V heads than query heads (grouped-query attention),
  // and with Positions::Rotary the rotary frequencies [head_dim / 2], scaling applied, and
  // the factor positions are divided by (transformers' linear scaling).
  bool gated_ffn = false;
  uint32_t kv_heads = 0;  // 0: nhead
  std::vector<float> rope_inv_freq;
  float rope_position_scale = 1.0f;
  // What config.json said of the rotary positions, for vkformer info (the tables above
  // are what runs): rope_theta, and rope_scaling's type ("" none, "linear", "llama3").
  double rope_theta = 0;
  std::string rope_scaling;

  // Each attention head's width, apart from d_model's share (config.json's head_dim: Mistral
  // NeMo's, Gemma's, T5's d_kv); 0: d_model / nhead. The attention's inner width, queries
  // and each head's output side by side, is nhead x head_dim (attention_width).
  uint32_t head_width = 0;
  // Token types an encoder's input adds a row of (BERT's type_vocab_size); 0: none.
  uint32_t token_types = 0;
  // A classification head's labels by id (config.json's id2label); empty: no classifier.
  std::vector<std::string> labels;

  uint32_t kv_head_count() const { return kv_heads ? kv_heads : nhead; }

  uint32_t head_dim() const { return head_width ? head_width : d_model / nhead; }
  uint32_t attention_width() const { return nhead * head_dim(); }
  // "decoder-only" or "encoder-decoder".
  const char* kind_name() const { return model_kind_name(kind); }
  // Parses and checks config.json; errors name the file and the field.
  static ModelConfig from_file(const std::string& path);
};

// Names as vkformer info prints them. Each is a switch over every enumerator, and the
// library builds with -Werror=switch: a new enumerator does not build without its name.
const char* activation_name(Activation a);              // "relu", "silu"...
const char* positions_name(ModelConfig::Positions p);  // "learned", "rotary"...

// What a model's checkpoint holds, as its file says (vkformer info --model): its tensors'
// elements (tied weights stored once count once), their storage types and their bytes.
struct CheckpointSummary {
  std::string file;                         // "model.safetensors", or a sharded checkpoint's index
  uint64_t tensors = 0, parameters = 0, bytes = 0;
  std::map<std::string, uint64_t> dtypes;  // "F32", "F16", "BF16" -> parameters stored so
  // The linear layers' weights on the device, by storage ("q8_0", ..., or the model's
  // precision, "fp32" or "fp16"): their bytes, and the weights that stayed in the model's
  // precision although blocks were asked for (rows not whole blocks), by name.
  std::map<std::string, uint64_t> weight_bytes;
  std::vector<std::string> weights_not_in_blocks;
};

// How Model::load stores a model.
struct LoadOptions {
  // Activations, norms, biases, positions, embeddings and the KV cache; the linear layers'
  // weights too, unless `weights` or `mix` says otherwise.
  DType precision = DType::F32;
  // The linear layers' weights (QKV, attention output, FFN, output projection: a tied one a
  // copy of the embedding) in llama.cpp's blocks of this type, quantized at load with its
  // reference quantizer; a weight whose rows are not whole 32-value blocks stays in
  // `precision` (CheckpointSummary names it). Unset: every weight in `precision`.
  std::optional<BlockType> weights;
  // Instead of one type: llama.cpp's mix (docs/models.md states its rule), for decoder-only
  // models. Setting both is an Error.
  std::optional<BlockMix> mix;
  // Called after each tensor is read, converted (quantized) and uploaded, with the tensors
  // done and their total: a caller's progress report (`vkformer` shows one on a terminal
  // when loading takes longer than a second). Called on the loading thread; unset: none.
  std::function<void(size_t done, size_t total)> progress;
};

struct GenerateOptions {
  // Ranges generate() enforces (an Error names the field): a beam wider than this only
  // multiplies host work ((beam x vocabulary) candidates a step), and more sources than
  // this belong in several calls.
  static constexpr uint32_t kMaxBeam = 128;
  static constexpr size_t kMaxSources = 1u << 16;
  static constexpr float kMaxTemperature = 100.0f;
  uint32_t max_new_tokens = 64;
  uint32_t beam = 1;            // > 1: beam search of this width (one source at a time)
  float length_penalty = 1.0f;  // beam: score / length^penalty
  float temperature = 0.0f;     // > 0: sampling instead of greedy
  uint32_t top_k = 0;           // sampling: keep the k most likely tokens (0: all)
  // transformers' repetition penalty (> 0; 1: none): before each choice, the logit of
  // every token the output already holds (a decoder-only model's prompt included) is
  // divided by it when positive and multiplied when negative.
  float repetition_penalty = 1.0f;
  static constexpr float kMaxRepetitionPenalty = 100.0f;
  float top_p = 1.0f;           // sampling: keep the smallest set with this much probability
  // Sampling draws on the GPU (Ops::sample): each draw's uniform number is a hash of
  // (seed, sequence, position), so a seed gives the same tokens however the steps are
  // grouped into submits.
  uint64_t seed = 0;
  bool stop_at_eos = true;  // false: always max_new_tokens (benchmarks)
  // Greedy and sampling: more tokens that end an output as the model's EOS does (it is
  // kept, as EOS is), and a test called with each output's tokens after each new one
  // (true: it ends there; `vkformer generate --stop` ends at a stop string this way).
  std::vector<uint32_t> eos_ids;
  std::function<bool(size_t output, const std::vector<uint32_t>& tokens)> stop;
  // Greedy decoding and sampling run many steps per submit with no host work between
  // them (argmax or the draw, EOS and positions on the GPU): one step in the first submit, so the first token
  // comes at once, then twice as many each submit, up to max_steps_per_submit, while a
  // submit's measured time stays within submit_budget_ms (a game sharing the queue must
  // not stall, and weak GPUs time out long submits). 0: no time budget. The encoder
  // keeps to it too, in submits of whole layers sized from the previous encode's time
  // (the first encode, which Session::warmup does, is one submit); beam search submits
  // one step at a time.
  float submit_budget_ms = 2.0f;
  uint32_t max_steps_per_submit = 64;
  // Set from any thread to stop a generation between two submits: generate() then
  // throws vkf::Cancelled. Null: not cancellable.
  const std::atomic<bool>* cancel = nullptr;
  // Called on the calling thread with each new token as soon as it is known (greedy and
  // sampling: after each submit, in order; beam search: the best hypothesis at the end):
  // the output's index (source or prompt) and the token. For streaming text (a decoder
  // such as vkformer's TextStream keeps UTF-8 whole across tokens). Empty: not called.
  std::function<void(size_t output, uint32_t token)> on_token;

  // Hugging Face generate() (a model with config().hugging_face; defaults() fills these
  // from its generation config). Lengths count the decoder's start token, as there.
  uint32_t min_length = 0;            // EOS is banned before this length (a decoder-only model's: prompt included)
  uint32_t min_new_tokens = 0;        // EOS is banned before this many new tokens
  uint32_t no_repeat_ngram_size = 0;  // no n-gram of this size appears twice
  std::vector<std::vector<uint32_t>> bad_words_ids;  // token sequences never generated
  std::optional<uint32_t> forced_bos_id, forced_eos_id;  // first token; last token at the length limit
  int early_stopping = 0;  // beam search: see GenerationDefaults
  uint32_t num_return_sequences = 1;  // beam search: this many outputs per source or prompt, best first

  // The options a model's own generation settings ask for: a Hugging Face model's
  // generation_config.json (num_beams, max_length - 1 new tokens, the processors);
  // otherwise the defaults above, at most 64 new tokens, within max_position.
  static GenerateOptions defaults(const ModelConfig& config);
  // The same for these prompts (or sources): a decoder-only model's max_new_tokens cut
  // to the positions the longest prompt leaves (a prompt that fills them all is left for
  // generate() to refuse by name).
  static GenerateOptions defaults(const ModelConfig& config, size_t longest_prompt);
};

// Thrown by Session::generate when GenerateOptions::cancel was set.
class Cancelled : public Error {
 public:
  Cancelled() : Error("generation cancelled", ErrorKind::Cancelled) {}
};

// What the last generate() did, counted by the context (vkf::Counters) over the call.
// An encoder-decoder's time is its encode, then its decode of every token. A decoder-
// only model's is its prompt (prompt_ms: until each prompt's first new token is known,
// as llama.cpp's "prompt eval" counts it), then its decode of the other tokens.
struct GenerateStats {
  double encode_ms = 0, decode_ms = 0;
  uint64_t tokens = 0;         // generated, every sequence together
  uint64_t decode_tokens = 0;  // of those, the ones decode_ms produced (a decoder-only model's: all but each first)
  uint64_t prompt_tokens = 0;  // a decoder-only model's prompts' tokens, every prompt together
  double prompt_ms = 0;
  uint64_t submits = 0, recordings = 0, dispatches = 0;
  double dispatches_per_decoder_layer = 0;  // in one recorded decode step
  double dispatches_per_encoder_layer = 0;  // in the last encode (5 with each LayerNorm folded in, 7 without);
                                            // a decoder-only model's: in its last prompt pass
  uint64_t encode_submits = 0;              // of the encodes (each source's, for beam search)
  double encode_gpu_ms = 0;                 // their GPU time, with profiling on (Session::set_profile); else 0
  double decode_tokens_per_second() const { return decode_ms > 0 ? decode_tokens / (decode_ms / 1e3) : 0; }
  double prompt_tokens_per_second() const { return prompt_ms > 0 ? prompt_tokens / (prompt_ms / 1e3) : 0; }
  double submits_per_token() const { return tokens ? double(submits) / tokens : 0; }
  double recordings_per_token() const { return tokens ? double(recordings) / tokens : 0; }
};

class Model {
 public:
  static std::shared_ptr<const Model> load(Context& ctx, const ModelFiles& files, DType precision = DType::F32);
  static std::shared_ptr<const Model> load(Context& ctx, const ModelFiles& files, const LoadOptions& options);
  ~Model();
  const ModelConfig& config() const;
  DType precision() const;
  const CheckpointSummary& checkpoint() const;

  struct Impl;
  const Impl& impl() const { return *impl_; }

 private:
  explicit Model(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
  CheckpointSummary checkpoint_;
};

// Activation memory, caches and recorded command lists for one thread's work.
class Session {
 public:
  explicit Session(std::shared_ptr<const Model> model);
  ~Session();
  Session(Session&&) noexcept;

  // Per source: the generated ids after BOS, EOS included when produced. A decoder-only
  // model (ModelConfig::kind DecoderOnly) takes prompts instead of sources and returns the
  // new tokens after each prompt (greedy or sampling; no beam search yet).
  std::vector<std::vector<uint32_t>> generate(const std::vector<std::vector<uint32_t>>& sources,
                                              const GenerateOptions& options = {});
  // A decoder-only model's logits of every position of `ids` [ids.size(), vocab]: row i
  // predicts token i+1 (the ids are used as given: no BOS is added).
  std::vector<float> score(const std::vector<uint32_t>& ids);
  // Teacher-forced logits [tgt.size(), tgt_vocab_size]: row i predicts token i+1.
  std::vector<float> score(const std::vector<uint32_t>& src, const std::vector<uint32_t>& tgt);
  // The same for a padded batch, in one pass: pair i's logits [targets[i].size(), tgt_vocab_size].
  std::vector<std::vector<float>> score(const std::vector<std::vector<uint32_t>>& sources,
                                        const std::vector<std::vector<uint32_t>>& targets);

  const GenerateStats& last_stats() const;
  const Model& model() const;
  // Compiles (or loads from the caches) the pipelines encoding and decoding use, with a
  // short generation, so the first real request does not stall on them (a game calls
  // this at load time). The on-disk caches (ContextOptions::cache_dir) keep the result
  // for the next run.
  struct WarmupOptions {
    // > 0: first tune the GEMM variants on this model's products (tune_gemm, its budget
    // this many seconds: a loading screen's) when the device has no tuning file for the
    // model's precision yet; the file then serves every later run. 0: no tuning. Tuning
    // needs the disk cache; without one it is skipped with a warning through the log.
    double tune_budget_s = 0;
  };
  void warmup();
  void warmup(const WarmupOptions& options);
  // What the last warmup's tune did (nullopt: it did not tune).
  const std::optional<GemmTuneReport>& last_tune() const;

  void set_profile(bool on);
  std::string profile_report() const;  // per-dispatch GPU times of the last encoder and decoder steps

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace vkf
