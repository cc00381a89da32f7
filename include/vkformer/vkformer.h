/**
 * @file vkformer.h
 * @brief vkformer's C API: transformer inference on any Vulkan GPU, from C, C++, C#,
 * Rust, Python ctypes or a game engine.
 *
 * Rules that hold for every function here:
 *  - Handles are opaque. Every handle a vkf_*_create or vkf_*_load returns is released
 *    by the matching vkf_*_free (which accepts NULL). A model keeps its context alive
 *    and a session its model, so they may be freed in any order.
 *  - Functions return a ::vkf_status. On failure, vkf_last_error() returns a message
 *    that says what went wrong, for the calling thread, until its next failing call. No
 *    C++ exception and no abort ever crosses this boundary.
 *  - Output arrays and strings belong to the caller: pass the buffer and its capacity;
 *    the functions report the size they needed, and ::VKF_ERROR_BUFFER_TOO_SMALL
 *    (writing nothing) when it does not fit.
 *  - Threads: a context and a model may be used from any number of threads at once; a
 *    session from one thread at a time (give each thread its own session). A call on a
 *    session that another thread's call or a job is using fails with ::VKF_ERROR_BUSY
 *    ("the session is busy"); it never races.
 *  - Lengths and counts are checked before anything is read, allocated or multiplied: a
 *    source or target length above the model's max_position, or a count whose product
 *    overflows, is ::VKF_ERROR_INVALID_ARGUMENT; a prompt that fits but leaves no room
 *    for the new tokens asked for is ::VKF_ERROR_INVALID_INPUT.
 *  - Structs with a struct_size grow at their end, never otherwise: a caller compiled
 *    against an older vkformer.h passes the size it knew, which any later library
 *    accepts (from the struct's first published size on), the fields past it taking
 *    their defaults; an output struct is written only up to it.
 *  - Handles are not checked: passing a handle after its vkf_*_free (use after free),
 *    freeing it twice, or passing a pointer that no vkf_* call returned is undefined
 *    behaviour, as with free() and every C library's handles.
 */
#ifndef VKFORMER_VKFORMER_H
#define VKFORMER_VKFORMER_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Raised whenever a struct, a function signature or a status's meaning changes
 *  (docs/c-api.md, "Migrating"). 2: ::VKF_ERROR_FAILED no longer covers a missing file,
 *  bad input, an unsupported model or feature, memory, a lost device or a busy session,
 *  which have statuses of their own. 3: vkf_generate_options grew the CLI's repetition
 *  penalty, end tokens, stop string and steps per submit, and generation applies a
 *  Hugging Face model's generation_config.json processors as the CLI does. 4: a struct's
 *  struct_size may be any published size (older callers keep working as structs grow);
 *  max_new_tokens 0 means the model's default length (64 new tokens for a decoder-only
 *  model, cut to fit after the prompt), not every position; on_token ends each output
 *  with a call carrying ::VKF_TOKEN_END and the rest of its text; vkf_generate_stats grew
 *  prompt_tokens, prompt_ms and decode_tokens; vkf_session_last_tokens and
 *  vkf_session_last_text fetch a result whose buffer was too small. 5: vkf_model_load_with
 *  and vkf_model_load_from_memory_with take vkf_load_options, whose weights may be
 *  llama.cpp's blocks (nothing that existed changed). 6: vkf_weights grew the K-quants
 *  and llama.cpp's mixes. 7: vkf_embed, vkf_embedding_width and vkf_embed_options
 *  (sentence embeddings); vkf_generate_options grew transformers' processors
 *  (no_repeat_ngram_size, min_length, min_new_tokens, bad_words, early_stopping); beam
 *  search runs for decoder-only models and sampling for Hugging Face encoder-decoders,
 *  which were VKF_ERROR_UNSUPPORTED. */
#define VKF_ABI_VERSION 7

/** The token of on_token's last call for each output: no new token, only the rest of
 *  the output's text (see vkf_generate_options::on_token). */
#define VKF_TOKEN_END 0xFFFFFFFFu

/** Marks the functions the library exports. */
#if defined(_WIN32) && defined(VKF_BUILDING_SHARED)
#define VKF_API __declspec(dllexport)
#elif defined(__GNUC__)
#define VKF_API __attribute__((visibility("default")))
#else
#define VKF_API
#endif

/** What a call did. */
typedef enum vkf_status {
  VKF_OK = 0,                     /**< it worked */
  VKF_ERROR_INVALID_ARGUMENT = 1, /**< a NULL handle or pointer, a zero size, a struct_size or option out of range */
  VKF_ERROR_BUFFER_TOO_SMALL = 2, /**< the caller's buffer cannot hold the result; nothing was written */
  VKF_ERROR_FAILED = 3,           /**< the operation failed otherwise: a malformed model file, a Vulkan
                                       error, a shader that does not compile... (vkf_last_error) */
  VKF_PENDING = 4,                /**< a job has not finished yet (vkf_job_poll, vkf_job_wait) */
  VKF_ERROR_CANCELLED = 5,        /**< a job was cancelled (vkf_job_cancel) */
  VKF_ERROR_NOT_FOUND = 6,        /**< a model directory or file that does not exist */
  VKF_ERROR_INVALID_INPUT = 7,    /**< the caller's data: ids outside the vocabulary, a prompt and its new
                                       tokens longer than the model allows, text that is not UTF-8 */
  VKF_ERROR_UNSUPPORTED = 8,      /**< a model family or setting vkformer does not run, or a device feature
                                       it needs (fp16 storage...) */
  VKF_ERROR_OUT_OF_MEMORY = 9,    /**< device or host memory, the context's memory_limit or the driver's heap
                                       budget: free something or lower the budget's users */
  VKF_ERROR_DEVICE_LOST = 10,     /**< the GPU stopped responding: free the context and create a new one */
  VKF_ERROR_BUSY = 11             /**< the session is running a job or another thread's call: one call at a
                                       time per session */
} vkf_status;

/** The storage precision of a model's weights and activations. */
typedef enum vkf_precision {
  VKF_PRECISION_FP32 = 0, /**< 32-bit floats: every device */
  VKF_PRECISION_FP16 = 1  /**< 16-bit floats: devices with 16-bit storage */
} vkf_precision;

/** A Vulkan device and everything vkformer keeps on it. */
typedef struct vkf_context vkf_context;
/** A loaded model (weights on the device) and its tokenizer. */
typedef struct vkf_model vkf_model;
/** Activation memory and recorded work, for one thread at a time. */
typedef struct vkf_session vkf_session;

/** The library's version, "MAJOR.MINOR.PATCH". */
VKF_API const char* vkf_version(void);
/** The ABI version the library was built with (compare with ::VKF_ABI_VERSION). */
VKF_API int vkf_abi_version(void);

/** The message of the calling thread's last failed call ("" if none). */
VKF_API const char* vkf_last_error(void);

/** How many Vulkan devices there are (in Vulkan enumeration order). */
VKF_API vkf_status vkf_device_count(uint32_t* count);
/** The name of device @p index into name[capacity] (NUL-terminated); *needed (may be
 *  NULL) receives the bytes the name takes with its NUL. */
VKF_API vkf_status vkf_device_name(uint32_t index, char* name, size_t capacity, size_t* needed);

/** How serious a message is. */
typedef enum vkf_log_level {
  VKF_LOG_DEBUG = 0,   /**< detail for developers */
  VKF_LOG_INFO = 1,    /**< what vkformer did (devices, caches) */
  VKF_LOG_WARNING = 2, /**< something the app should know: a validation-layer warning, a slow path */
  VKF_LOG_ERROR = 3    /**< a validation-layer error, a failed operation */
} vkf_log_level;

/** Receives vkformer's messages, the Khronos validation layer's included, from any of
 *  vkformer's threads (a job's too): it must be thread-safe and must not call vkformer. */
typedef void (*vkf_log_callback)(void* user, vkf_log_level level, const char* message);

/** How vkf_context_create chooses and opens a device. */
typedef struct vkf_context_options {
  uint32_t struct_size;  /**< sizeof(vkf_context_options): lets the struct grow compatibly */
  const char* device;    /**< index ("1") or name piece ("radeon"); NULL or "": VKF_DEVICE, else the best */
  int validation;        /**< 1: Khronos validation layer on; 0: off; -1: VKF_VALIDATION decides */
  uint64_t memory_limit; /**< the most device memory vkformer's buffers may hold, bytes; 0: no limit */
  int within_heap_budget; /**< 1 (default): refuse memory past the driver's heap budget (VK_EXT_memory_budget),
                               so the app's own memory is not evicted; 0: allocate past it */
  const char* cache_dir; /**< the SPIR-V and pipeline caches' directory: ship one filled by
                              vkf_session_warmup with the app; NULL: VKF_CACHE_DIR or ~/.cache/vkformer;
                              "off": none on disk */
  vkf_log_callback log;  /**< messages (validation included) go here; NULL: warnings and errors to stderr */
  void* log_user;        /**< passed to log */
} vkf_context_options;

/** The defaults for vkf_context_options (struct_size filled in). */
VKF_API vkf_context_options vkf_context_options_default(void);
/** Opens a device of vkformer's own; @p options may be NULL (the defaults). */
VKF_API vkf_status vkf_context_create(const vkf_context_options* options, vkf_context** context);
/** Releases a context (the device closes when its models and sessions are gone too). */
VKF_API void vkf_context_free(vkf_context* context);

/** Vulkan objects an application lends to vkformer, so it runs on the app's own device
 *  (handles as void*: VkInstance, VkPhysicalDevice, VkDevice, VkQueue). vkformer
 *  destroys none of them and never waits for the whole device; free the context (and
 *  its models and sessions) before destroying them. */
typedef struct vkf_borrowed_vulkan {
  uint32_t struct_size;                  /**< sizeof(vkf_borrowed_vulkan) */
  void* instance;                        /**< VkInstance */
  uint32_t api_version;                  /**< the instance's VkApplicationInfo::apiVersion (1.1 or newer) */
  void* physical_device;                 /**< VkPhysicalDevice the device was created on */
  void* device;                          /**< VkDevice */
  uint32_t queue_family;                 /**< a queue family with compute */
  void* queue;                           /**< VkQueue of that family */
  const void* enabled_features;          /**< the VkPhysicalDeviceFeatures2 the device was created with, or NULL */
  const char* const* enabled_extensions; /**< the device extensions it was created with */
  uint32_t enabled_extension_count;      /**< how many enabled_extensions there are */
  void* get_instance_proc_addr;          /**< the app's PFN_vkGetInstanceProcAddr; NULL: the system loader's */
  void (*lock_queue)(void* user);        /**< called before each of vkformer's queue submissions (NULL: an
                                              internal lock, for a queue the app does not use itself) */
  void (*unlock_queue)(void* user);      /**< called after it; both or neither */
  void* user;                            /**< passed to lock_queue and unlock_queue */
  uint64_t memory_limit;                 /**< as vkf_context_options::memory_limit (0: no limit) */
  vkf_log_callback log;                  /**< vkformer's messages (NULL: warnings and errors to stderr); the
                                              validation layer, if any, reports through the app's own messenger */
  void* log_user;                        /**< passed to log */
} vkf_borrowed_vulkan;

/** Opens a context on the application's own Vulkan device (see vkf_borrowed_vulkan);
 *  it uses only the optional features the device was created with. */
VKF_API vkf_status vkf_context_create_borrowed(const vkf_borrowed_vulkan* borrowed, vkf_context** context);

/** Device memory in vkformer's live buffers now, and the most it has held (either
 *  pointer may be NULL). */
VKF_API vkf_status vkf_context_memory(const vkf_context* context, uint64_t* allocated, uint64_t* peak);

/** The device heap vkformer's buffers live in, as the driver reports it with
 *  VK_EXT_memory_budget: its size, the budget this process may use without hurting
 *  performance, and what the process (vkformer and the rest of the app) uses now. Without
 *  the extension the budget is the heap's size and the usage 0. Any pointer may be NULL. */
VKF_API vkf_status vkf_context_heap_budget(const vkf_context* context, uint64_t* heap_size, uint64_t* budget,
                                           uint64_t* usage);

/** The context's device name, as vkf_device_name gives it. */
VKF_API vkf_status vkf_context_device_name(const vkf_context* context, char* name, size_t capacity,
                                           size_t* needed);

/** Loads a model directory: config.json and model.safetensors (or a sharded checkpoint's
 *  index and shards), with its tokenizer when it has one (vocab.json and merges.txt,
 *  Marian's source.spm, a decoder-only model's tokenizer.json or tokenizer.model). `path`
 *  may instead name a GGUF file (llama.cpp's one-file format; architectures llama, qwen2
 *  and gpt2, weights F32, F16, BF16 or in the blocks vkformer reads, used as they are,
 *  and its tokenizer). docs/models.md, "GGUF files".
 *  ::VKF_ERROR_NOT_FOUND: no such directory, or no config.json or weights in it;
 *  ::VKF_ERROR_UNSUPPORTED: a family or setting vkformer does not run; ::VKF_ERROR_FAILED:
 *  a malformed file (vkf_last_error names it and what is wrong). */
VKF_API vkf_status vkf_model_load(vkf_context* context, const char* path, vkf_precision precision,
                                  vkf_model** model);
/** One file of a model that an app holds in memory (vkf_model_load_from_memory): a
 *  string it built, or bytes mapped from its asset pack. */
typedef struct vkf_memory_file {
  const char* name; /**< its name in a model directory: "config.json", "generation_config.json",
                         "model.safetensors" (or "model.safetensors.index.json" and its shards),
                         "vocab.json", "merges.txt", "tokenizer.json", "source.spm"...; or one
                         "*.gguf" file and no config.json (a GGUF model); NUL-terminated */
  const void* data; /**< its bytes, as the file holds them (a text file needs no terminator) */
  size_t size;      /**< how many bytes */
} vkf_memory_file;

/** Loads a model from `count` files the app holds in memory, as vkf_model_load loads
 *  them from a directory, with the same checks and limits (a malformed, truncated or
 *  hostile file is refused by name: "config.json (in memory): ..."), as ncnn's
 *  load_param_mem and onnxruntime's OrtCreateSessionFromArray allow. The bytes are
 *  read where they are, never copied whole, and only during the call: the weights go to
 *  the device and the tokenizer keeps its own tables, so the app may unmap or free them
 *  once it returns. ::VKF_ERROR_INVALID_ARGUMENT: no files, a NULL name, NULL data with
 *  a size; ::VKF_ERROR_INVALID_INPUT: a name that is not a plain file name, or given
 *  twice; ::VKF_ERROR_NOT_FOUND: no config.json, or no weights. */
VKF_API vkf_status vkf_model_load_from_memory(vkf_context* context, const vkf_memory_file* files, size_t count,
                                              vkf_precision precision, vkf_model** model);
/** How the linear layers' weights are stored (vkf_load_options::weights): in the model's
 *  precision, or in llama.cpp's blocks (32 values; 256 for the K-quants) or its mixes,
 *  quantized at load with its reference quantizers (a K-quant weight whose rows are not
 *  whole super-blocks takes llama.cpp's fallback; rows that are not whole 32-value
 *  blocks stay in the precision). docs/models.md, "Weights in blocks". */
typedef enum vkf_weights {
  VKF_WEIGHTS_PRECISION = 0, /**< in vkf_load_options::precision, as vkf_model_load stores them */
  VKF_WEIGHTS_Q8_0 = 1,      /**< 8.5 bits a value */
  VKF_WEIGHTS_Q4_0 = 2,      /**< 4.5 bits */
  VKF_WEIGHTS_Q4_1 = 3,      /**< 5 bits */
  VKF_WEIGHTS_Q5_0 = 4,      /**< 5.5 bits */
  VKF_WEIGHTS_Q5_1 = 5,      /**< 6 bits */
  VKF_WEIGHTS_Q4_K = 6,      /**< 4.5 bits, super-blocks of 256 values (ABI 6) */
  VKF_WEIGHTS_Q5_K = 7,      /**< 5.5 bits (ABI 6) */
  VKF_WEIGHTS_Q6_K = 8,      /**< 6.5625 bits (ABI 6) */
  VKF_WEIGHTS_Q4_K_M = 9,    /**< llama.cpp's mix: Q4_K, Q6_K where it matters; decoder-only models (ABI 6) */
  VKF_WEIGHTS_Q5_K_M = 10    /**< llama.cpp's mix: Q5_K, Q6_K where it matters (ABI 6) */
} vkf_weights;

/** How vkf_model_load_with stores a model. */
typedef struct vkf_load_options {
  uint32_t struct_size;   /**< sizeof(vkf_load_options), or any published size */
  vkf_precision precision; /**< activations, norms, embeddings, the KV cache (and the weights with VKF_WEIGHTS_PRECISION) */
  vkf_weights weights;     /**< the linear layers' weights (docs/models.md, "Weights in blocks") */
} vkf_load_options;
/** The defaults: fp32, weights in it, struct_size filled in. */
VKF_API vkf_load_options vkf_load_options_default(void);
/** vkf_model_load with a model's storage chosen by @p options (NULL: the defaults):
 *  weights in llama.cpp's blocks take a third to a half of fp16's memory.
 *  ::VKF_ERROR_INVALID_ARGUMENT: a struct_size or value out of range. */
VKF_API vkf_status vkf_model_load_with(vkf_context* context, const char* directory, const vkf_load_options* options,
                                       vkf_model** model);
/** vkf_model_load_from_memory with the storage vkf_model_load_with takes. */
VKF_API vkf_status vkf_model_load_from_memory_with(vkf_context* context, const vkf_memory_file* files, size_t count,
                                                   const vkf_load_options* options, vkf_model** model);
/** The most text, in bytes, that vkf_tokenize, vkf_translate and vkf_translate_start take
 *  for this model before tokenizing it; longer text is ::VKF_ERROR_INVALID_INPUT, so a
 *  hostile or runaway string costs bounded time and memory. 0 (the default): what a
 *  sequence of the model's positions can hold, its positions times its vocabulary's
 *  longest token. Set it higher to tokenize long documents for chunking, lower to bound
 *  an app's inputs. Thread-safe. */
VKF_API vkf_status vkf_model_set_text_limit(vkf_model* model, size_t bytes);
/** Releases a model (its weights go when its sessions are gone too). */
VKF_API void vkf_model_free(vkf_model* model);

/** What a loaded model is, so an app sizes its buffers and picks its options without
 *  provoking ::VKF_ERROR_BUFFER_TOO_SMALL (vkf_model_info_get fills it). */
typedef struct vkf_model_info {
  uint32_t struct_size;        /**< sizeof(vkf_model_info): set it before the call */
  char architecture[32];       /**< config.json's "architecture" (vkformer's own format) or Hugging Face
                                    "model_type": "torch-seq2seq", "marian", "bart", "gpt2", "llama",
                                    "mistral", "qwen2"; NUL-terminated */
  int decoder_only;            /**< 1: vkf_generate's source is a prompt it continues (GPT-2, Llama);
                                    0: an encoder-decoder translating a source */
  int has_tokenizer;           /**< 1: vkf_tokenize, vkf_detokenize and vkf_translate work */
  uint32_t source_vocab_size;  /**< source (or prompt) ids must be below it */
  uint32_t target_vocab_size;  /**< generated ids are below it */
  uint32_t max_positions;      /**< positions one sequence may use: an encoder-decoder's source, and its
                                    output tokens; a decoder-only prompt and its new tokens together */
  uint32_t bos_id;             /**< an encoder-decoder's first decoder input (decoder_start_token_id) */
  uint32_t eos_id;             /**< ends an output (kept in vkf_generate's tokens) */
  uint32_t pad_id;             /**< pads sources in a batch */
  uint32_t d_model;            /**< the model's width */
  uint32_t layers;             /**< encoder and decoder layers together */
  uint32_t heads;              /**< attention (query) heads */
  uint32_t kv_heads;           /**< key/value heads (fewer than heads: grouped-query attention) */
  uint32_t default_num_beams;  /**< generation_config.json's (else 1), as vkf_generate_options_default
                                    does not know the model */
  float default_length_penalty;      /**< generation_config.json's (else 1) */
  float default_repetition_penalty;  /**< generation_config.json's (else 1) */
} vkf_model_info;

/** Fills `info` (its struct_size set first) with the model's facts. */
VKF_API vkf_status vkf_model_info_get(const vkf_model* model, vkf_model_info* info);

/** The model's tokenizer over NUL-terminated UTF-8 `text`: the ids vkf_generate takes
 *  (a BART source with its <s> and </s>; a decoder-only prompt as transformers encodes
 *  it), written to `ids` when `capacity` holds them all; `*count` is how many there are,
 *  also on ::VKF_ERROR_BUFFER_TOO_SMALL (call with ids NULL to size the buffer).
 *  ::VKF_ERROR_INVALID_INPUT for text that is not UTF-8; ::VKF_ERROR_FAILED for a
 *  model without a tokenizer (vkf_model_info's has_tokenizer is 0). Thread-safe. */
VKF_API vkf_status vkf_tokenize(const vkf_model* model, const char* text, uint32_t* ids, size_t capacity,
                                size_t* count);
/** The text of `count` ids (special tokens left out, as transformers' decode with
 *  skip_special_tokens), NUL-terminated in `text` when `capacity` holds it; `*needed` is
 *  its size with the terminator, also on ::VKF_ERROR_BUFFER_TOO_SMALL. An id outside the
 *  tokenizer's vocabulary is ::VKF_ERROR_INVALID_ARGUMENT. Thread-safe. */
VKF_API vkf_status vkf_detokenize(const vkf_model* model, const uint32_t* ids, size_t count, char* text,
                                  size_t capacity, size_t* needed);

/** A session on a model: its own activation memory, for one thread at a time. */
VKF_API vkf_status vkf_session_create(vkf_model* model, vkf_session** session);
/** Releases a session. A job still running on it is cancelled and waited for (the job's
 *  handle stays valid until vkf_job_free). Called from that job's own on_token, it frees
 *  nothing (the job is running on the session below the call): vkf_last_error and the
 *  context's log say so; free it once the job has ended. */
VKF_API void vkf_session_free(vkf_session* session);
/** Compiles every pipeline the session's model uses (at load time, so the first request
 *  does not stall a frame); the on-disk caches keep them for the next run. */
VKF_API vkf_status vkf_session_warmup(vkf_session* session);

/** How vkf_session_warmup_with warms a session up. */
typedef struct vkf_warmup_options {
  uint32_t struct_size;  /**< sizeof(vkf_warmup_options) */
  double tune_budget_s;  /**< > 0: first tune the GEMM kernel variants on the model's products for at most about
                              this many seconds (a loading screen's), when the device has no tuning file for the
                              model's precision yet: each variant is checked against a double-precision
                              reference before it is timed, and the winners go to a tuning file in the cache
                              directory that every later run reads. Without a disk cache it is skipped with a
                              warning. 0: no tuning (vkf_session_warmup) */
} vkf_warmup_options;

/** The defaults for vkf_warmup_options: no tuning, struct_size filled in. */
VKF_API vkf_warmup_options vkf_warmup_options_default(void);
/** vkf_session_warmup, with a tune of the GEMM variants first when @p options asks for one
 *  (see vkf_warmup_options); @p options may be NULL (the defaults). The tune's time counts
 *  against tune_budget_s, the pipelines' compilation after it does not. */
VKF_API vkf_status vkf_session_warmup_with(vkf_session* session, const vkf_warmup_options* options);

/** How to decode. */
typedef struct vkf_generate_options {
  uint32_t struct_size;    /**< sizeof(vkf_generate_options) */
  uint32_t max_new_tokens; /**< the most tokens each output gets; 0: the model's default, as `vkformer generate`
                                takes it: a Hugging Face encoder-decoder's generation_config.json max_length - 1,
                                otherwise 64; a decoder-only model's cut to the positions its longest prompt leaves
                                (a larger value that does not fit is ::VKF_ERROR_INVALID_INPUT) */
  uint32_t beam;           /**< > 1: beam search of this width (0 or 1: greedy) */
  float length_penalty;    /**< beam: hypotheses rank by score / length^length_penalty */
  float temperature;       /**< > 0: sampling at this temperature; 0: greedy */
  uint32_t top_k;          /**< sampling: the k most likely tokens (0: all) */
  float top_p;             /**< sampling: the smallest set holding this much probability (0: 1, all) */
  uint64_t seed;           /**< sampling: the seed (0 as good as any); each draw is Philox4x32-10 keyed by it,
                                counting the sequence and position, so one seed always draws the same tokens */
  float submit_budget_ms;  /**< the GPU time one submit may take (default 2 ms; 0: no bound): greedy decoding
                                and sampling size their many-step submits by it, and the encoder goes in pieces of
                                whole layers that fit it, timed by the previous encode (the first
                                encode, which vkf_session_warmup does, is one submit; CPU drivers such
                                as lavapipe keep it whole). Beam search submits one decode step at a
                                time. */
  /** Words as they come (NULL: none): called after each new token of each output, on the
   *  thread that runs the generation (a job's own thread for vkf_translate_start and
   *  vkf_generate_start, never the frame's), with `user`, the output's index, the token,
   *  and the text it makes certain: whole UTF-8 characters only (a token ending inside a
   *  character gives "" and a later one the rest), NUL-terminated, `piece` NULL when the
   *  model has no tokenizer. Once an output has ended, one more call gives the rest of its
   *  text (a clean-up of spaces or the last word held back until the output's end), with
   *  token ::VKF_TOKEN_END: every output gets it, after all its tokens, when the
   *  generation succeeds (not when it fails or is cancelled), and its return value is
   *  ignored. All the pieces together are vkf_detokenize of the output's tokens. Return
   *  nonzero to end that output there (greedy and sampling; beam search calls it once the
   *  search is done, in order, and cannot be ended early). */
  int (*on_token)(void* user, size_t output, uint32_t token, const char* piece, size_t piece_length);
  void* on_token_user; /**< passed to on_token */
  /* ABI 3: the rest of `vkformer generate`'s options. */
  float repetition_penalty;      /**< transformers' repetition penalty: the logit of every token an output
                                      already holds (a decoder-only prompt's included) is divided by it when
                                      positive, multiplied when negative; from above 0 to 100, 1: none; 0: the
                                      model's own (generation_config.json's, else 1) */
  const uint32_t* eos_ids;       /**< greedy and sampling: eos_id_count more tokens that end an output as the
                                      model's EOS does (kept in the tokens, as EOS is); NULL when the count is 0 */
  size_t eos_id_count;           /**< how many eos_ids (at most 1024) */
  const char* stop;              /**< greedy and sampling, a model with a tokenizer: NULL, or a non-empty UTF-8
                                      string that ends an output at the token that completes it in the output's
                                      text (that token is kept), as `vkformer generate --stop`. eos_ids and
                                      stop are copied before the call returns (vkf_*_start's too) */
  uint32_t max_steps_per_submit; /**< greedy and sampling: the most decode steps one submit runs (0: 64), within
                                      submit_budget_ms */
  /* ABI 7: transformers' processors and beam settings, over the model's own (a Hugging Face
     model's generation_config.json gives those; docs/models.md, "Generation"). For the
     counts, 0 keeps the model's own and VKF_PROCESSOR_OFF turns the processor off. */
  uint32_t reserved;             /**< unused (where ABI 3 to 6 ended in padding, which older callers leave
                                      unset): keep it 0 */
  uint32_t no_repeat_ngram_size; /**< no n-gram of this size appears twice */
  uint32_t min_length;           /**< no EOS before this length (a decoder-only prompt counts; an encoder-
                                      decoder's start token does) */
  uint32_t min_new_tokens;       /**< no EOS before this many new tokens */
  const uint32_t* bad_words;     /**< token sequences never generated, each as its length then its ids
                                      (2, 5, 17, 1, 9: the pair 5 17 and the token 9), bad_words_length values
                                      in all; NULL and 0: the model's own. Copied before the call returns */
  size_t bad_words_length;       /**< how many values bad_words holds (at most 2^20) */
  int early_stopping;            /**< beam: 0 the model's own, 1 true, 2 false, 3 "never" */
} vkf_generate_options;

/** A processor count of vkf_generate_options turned off, whatever the model's own. */
#define VKF_PROCESSOR_OFF 0xFFFFFFFFu

/** The defaults for vkf_generate_options: greedy, struct_size filled in. */
VKF_API vkf_generate_options vkf_generate_options_default(void);

/** Token ids in, token ids out: the ids generated after BOS (EOS included when
 *  produced) into tokens[capacity]; *count receives how many there are. @p options may
 *  be NULL (the defaults: greedy, the model's default length). ::VKF_ERROR_BUFFER_TOO_SMALL
 *  keeps the result: vkf_session_last_tokens fetches it without running again. */
VKF_API vkf_status vkf_generate(vkf_session* session, const uint32_t* source, size_t source_length,
                                const vkf_generate_options* options, uint32_t* tokens, size_t capacity,
                                size_t* count);

/** Several sources (or decoder-only prompts) in one call, decoded together as one batch
 *  (beam search: one after another): `batch` sources, source i at sources[i] with
 *  lengths[i] ids. Each output's tokens go to `tokens` one after another, output i's
 *  count to counts[i] (counts holds `batch` entries); `*total` is their sum, also on
 *  ::VKF_ERROR_BUFFER_TOO_SMALL, when nothing is written to tokens. */
VKF_API vkf_status vkf_generate_batch(vkf_session* session, const uint32_t* const* sources, const size_t* lengths,
                                      size_t batch, const vkf_generate_options* options, uint32_t* tokens,
                                      size_t capacity, size_t* counts, size_t* total);

/** Text in, text out with the model's tokenizer: an encoder-decoder's translation of
 *  @p text (UTF-8), or a decoder-only model's continuation of it as a prompt (GPT-2,
 *  a Llama with tokenizer.json: the new text only, as `vkformer generate --prompt`),
 *  into out[capacity], NUL-terminated; *needed (may be NULL) receives the bytes it takes
 *  with its NUL. @p options may be NULL. */
VKF_API vkf_status vkf_translate(vkf_session* session, const char* text, const vkf_generate_options* options,
                                 char* out, size_t capacity, size_t* needed);

/** Teacher-forced scoring: the logits [target_length, vocabulary] the model gives
 *  after each target prefix (row i predicts target token i + 1; target[0] is BOS) into
 *  logits[capacity]; *count receives target_length * vocabulary. */
VKF_API vkf_status vkf_score(vkf_session* session, const uint32_t* source, size_t source_length,
                             const uint32_t* target, size_t target_length, float* logits, size_t capacity,
                             size_t* count);

/** What the session's last vkf_generate or vkf_translate did (its last job's too). */
typedef struct vkf_generate_stats {
  uint32_t struct_size;                /**< sizeof(vkf_generate_stats): set it before the call */
  double encode_ms;                    /**< an encoder-decoder's encoding of the source (0 for decoder-only) */
  double decode_ms;                    /**< generating decode_tokens */
  uint64_t tokens;                     /**< tokens generated */
  uint64_t submits;                    /**< queue submissions, encode and decode */
  uint64_t recordings;                 /**< command buffers recorded */
  uint64_t dispatches;                 /**< compute dispatches submitted */
  double dispatches_per_decoder_layer; /**< in one recorded decode step */
  /* ABI 4 */
  uint64_t prompt_tokens;              /**< a decoder-only model's prompt tokens, every prompt together */
  double prompt_ms;                    /**< a decoder-only model's: from the call until each prompt's first new
                                            token was known (the prompt read, as llama.cpp's prompt eval) */
  uint64_t decode_tokens;              /**< the tokens decode_ms produced: every generated token for an
                                            encoder-decoder, all but each output's first for a decoder-only model */
} vkf_generate_stats;

/** The counters of the session's last generation. */
VKF_API vkf_status vkf_session_stats(const vkf_session* session, vkf_generate_stats* stats);

/** The session's last result (vkf_generate, vkf_generate_batch, vkf_translate or a job on
 *  it), kept until its next generation starts, so a call that answered
 *  ::VKF_ERROR_BUFFER_TOO_SMALL need not run again: output @p output's tokens (0 for a
 *  single source) into tokens[capacity], *count receiving how many. ::VKF_ERROR_INVALID_ARGUMENT:
 *  no result yet (or the last generation failed), or @p output past the last result's outputs. */
VKF_API vkf_status vkf_session_last_tokens(const vkf_session* session, size_t output, uint32_t* tokens, size_t capacity,
                                           size_t* count);
/** The same result's text, as vkf_translate gives it (output @p output's tokens through the
 *  model's tokenizer), NUL-terminated in out[capacity]; *needed (may be NULL) receives its
 *  size with the NUL. ::VKF_ERROR_FAILED for a model without a tokenizer. */
VKF_API vkf_status vkf_session_last_text(const vkf_session* session, size_t output, char* out, size_t capacity,
                                         size_t* needed);

/** A time-series forecaster ("torch-patch-forecaster" model directory). Usable from
 *  any number of threads at once. */
typedef struct vkf_forecaster vkf_forecaster;

/** Loads a forecaster directory (config.json, model.safetensors). */
VKF_API vkf_status vkf_forecaster_load(vkf_context* context, const char* directory, vkf_precision precision,
                                       vkf_forecaster** forecaster);
/** How many values a window holds and how many the forecaster predicts after it
 *  (either pointer may be NULL). */
VKF_API vkf_status vkf_forecaster_shape(const vkf_forecaster* forecaster, uint32_t* window, uint32_t* horizon);
/** Forecasts @p count windows (count * window values, one window after another) into
 *  out[capacity]: count * horizon values. */
VKF_API vkf_status vkf_forecast(const vkf_forecaster* forecaster, const float* windows, size_t count, float* out,
                                size_t capacity);
/** Releases a forecaster. Accepts NULL. */
VKF_API void vkf_forecaster_free(vkf_forecaster* forecaster);

/** A translation or generation running on a thread of its own, for a frame loop: the
 *  job calls never wait for the GPU (except vkf_job_wait, up to its timeout, and
 *  vkf_job_free of a running job, which cancels it and waits). A session runs one job
 *  at a time; while it does, other calls on it fail. */
typedef struct vkf_job vkf_job;

/** Starts vkf_translate's work as a job and returns at once. */
VKF_API vkf_status vkf_translate_start(vkf_session* session, const char* text, const vkf_generate_options* options,
                                       vkf_job** job);
/** Starts vkf_generate's work as a job and returns at once. */
VKF_API vkf_status vkf_generate_start(vkf_session* session, const uint32_t* source, size_t source_length,
                                      const vkf_generate_options* options, vkf_job** job);
/** ::VKF_PENDING while the job runs; once it has finished, its outcome: ::VKF_OK,
 *  ::VKF_ERROR_CANCELLED, or the status the same call would have returned synchronously
 *  (::VKF_ERROR_INVALID_INPUT, ::VKF_ERROR_OUT_OF_MEMORY, ::VKF_ERROR_DEVICE_LOST,
 *  ::VKF_ERROR_FAILED...; the message: vkf_last_error after this call). Never waits. */
VKF_API vkf_status vkf_job_poll(vkf_job* job);
/** As vkf_job_poll, after waiting at most @p timeout_ms for the job to finish:
 *  ::VKF_PENDING when it has not finished by then. */
VKF_API vkf_status vkf_job_wait(vkf_job* job, uint32_t timeout_ms);
/** Asks the job to stop, from any thread. It ends with ::VKF_ERROR_CANCELLED at its
 *  next step (a step already on the GPU finishes first). */
VKF_API vkf_status vkf_job_cancel(vkf_job* job);
/** A finished translation job's text, as vkf_translate gives it; ::VKF_PENDING while it runs. */
VKF_API vkf_status vkf_job_text(vkf_job* job, char* out, size_t capacity, size_t* needed);
/** A finished generation job's tokens, as vkf_generate gives them; ::VKF_PENDING while it runs. */
VKF_API vkf_status vkf_job_tokens(vkf_job* job, uint32_t* tokens, size_t capacity, size_t* count);
/** Cancels a running job, waits for it to end, and frees it. Accepts NULL. Called from the
 *  job's own on_token, it frees nothing (a thread cannot wait for itself): vkf_last_error
 *  and the context's log say so; free the job once it has ended (vkf_job_poll). */
VKF_API void vkf_job_free(vkf_job* job);

/** Sentence embeddings (ABI 7): an encoder-only model loaded from a sentence-transformers
 *  directory (or a plain BERT one: the mean of its tokens) embeds texts as
 *  sentence-transformers does (docs/models.md, "Sentence embeddings"). */
typedef struct vkf_embed_options {
  uint32_t struct_size; /**< sizeof(vkf_embed_options), or any published size */
  uint32_t batch_size;  /**< texts per batch on the device (default 32); 1 to 4096 */
} vkf_embed_options;
/** The defaults: batches of 32, struct_size filled in. */
VKF_API vkf_embed_options vkf_embed_options_default(void);
/** The width of one embedding: the model's hidden size times its pooling modes.
 *  ::VKF_ERROR_UNSUPPORTED: the model embeds nothing (not encoder-only, no tokenizer, a
 *  pooling or module vkformer does not run: vkf_last_error says which). */
VKF_API vkf_status vkf_embedding_width(const vkf_model* model, uint32_t* width);
/** Embeds @p count NUL-terminated UTF-8 texts into @p embeddings [count, width] (row i:
 *  text i), each cut to the model's max_seq_length tokens as sentence-transformers cuts
 *  it. @p capacity: floats the buffer holds; @p needed (may be NULL): floats the result
 *  takes, set before anything else, so a call with capacity 0 sizes the buffer
 *  (::VKF_ERROR_BUFFER_TOO_SMALL). @p options NULL: the defaults. One call at a time per
 *  model (another thread's: ::VKF_ERROR_BUSY). ::VKF_ERROR_INVALID_INPUT: a text that is
 *  not UTF-8 or longer than vkf_model_set_text_limit where one is set (the message names
 *  its index). */
VKF_API vkf_status vkf_embed(vkf_model* model, const char* const* texts, size_t count, const vkf_embed_options* options,
                             float* embeddings, size_t capacity, size_t* needed);

/** How many times the calling thread has waited for the GPU inside vkformer: a frame
 *  loop can check that its own calls never do. */
VKF_API uint64_t vkf_blocking_waits_on_this_thread(void);

#ifdef __cplusplus
}
#endif

#endif /* VKFORMER_VKFORMER_H */
