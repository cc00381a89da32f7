/* vkformer C API: transformer inference on any Vulkan GPU, from C, C++, C#, Rust,
 * Python ctypes or a game engine.
 *
 * Rules that hold for every function here:
 *  - Handles are opaque. Every handle a vkf_*_create or vkf_*_load returns is released
 *    by the matching vkf_*_free (which accepts NULL). A model keeps its context alive
 *    and a session its model, so they may be freed in any order.
 *  - Functions return a vkf_status. On failure, vkf_last_error() returns a message that
 *    says what went wrong, for the calling thread, until its next failing call. No C++
 *    exception and no abort ever crosses this boundary.
 *  - Output arrays and strings belong to the caller: pass the buffer and its capacity;
 *    the functions report the size they needed, and VKF_ERROR_BUFFER_TOO_SMALL (writing
 *    nothing) when it does not fit.
 *  - Threads: a context and a model may be used from any number of threads at once; a
 *    session from one thread at a time (give each thread its own session).
 */
#ifndef VKFORMER_VKFORMER_H
#define VKFORMER_VKFORMER_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Raised whenever a struct or a function signature changes incompatibly. */
#define VKF_ABI_VERSION 1

#if defined(_WIN32) && defined(VKF_BUILDING_SHARED)
#define VKF_API __declspec(dllexport)
#elif defined(__GNUC__)
#define VKF_API __attribute__((visibility("default")))
#else
#define VKF_API
#endif

typedef enum vkf_status {
  VKF_OK = 0,
  VKF_ERROR_INVALID_ARGUMENT = 1, /* a NULL handle or pointer, a zero size, a value out of range */
  VKF_ERROR_BUFFER_TOO_SMALL = 2, /* the caller's buffer cannot hold the result; nothing was written */
  VKF_ERROR_FAILED = 3,           /* the operation failed: a missing device or feature, a bad model
                                     file, a token id outside the vocabulary... (see vkf_last_error) */
  VKF_PENDING = 4,                /* a job has not finished yet (vkf_job_poll, vkf_job_wait) */
  VKF_ERROR_CANCELLED = 5         /* a job was cancelled (vkf_job_cancel) */
} vkf_status;

typedef enum vkf_precision { VKF_PRECISION_FP32 = 0, VKF_PRECISION_FP16 = 1 } vkf_precision;

typedef struct vkf_context vkf_context; /* a Vulkan device and everything vkformer keeps on it */
typedef struct vkf_model vkf_model;     /* a loaded model (weights on the device) and its tokenizer */
typedef struct vkf_session vkf_session; /* activation memory and recorded work for one thread */

/* The library's version, "MAJOR.MINOR.PATCH"; and the ABI version it was built with. */
VKF_API const char* vkf_version(void);
VKF_API int vkf_abi_version(void);

/* The message of the calling thread's last failed call ("" if none). */
VKF_API const char* vkf_last_error(void);

/* Devices, in Vulkan enumeration order. */
VKF_API vkf_status vkf_device_count(uint32_t* count);
/* The name of device `index` into name[capacity] (NUL-terminated); *needed (may be NULL)
 * receives the bytes the name takes with its NUL. */
VKF_API vkf_status vkf_device_name(uint32_t index, char* name, size_t capacity, size_t* needed);

typedef struct vkf_context_options {
  uint32_t struct_size; /* sizeof(vkf_context_options): lets the struct grow compatibly */
  const char* device;   /* index ("1") or name piece ("radeon"); NULL or "": VKF_DEVICE, else the best */
  int validation;       /* 1: Khronos validation layer on; 0: off; -1: VKF_VALIDATION decides */
  uint64_t memory_limit; /* the most device memory vkformer's buffers may hold, bytes; 0: no limit */
} vkf_context_options;

/* The defaults for vkf_context_options (struct_size filled in). */
VKF_API vkf_context_options vkf_context_options_default(void);
/* options may be NULL (defaults). */
VKF_API vkf_status vkf_context_create(const vkf_context_options* options, vkf_context** context);
VKF_API void vkf_context_free(vkf_context* context);
/* Vulkan objects an application lends to vkformer, so it runs on the app's own device
 * (handles as void*: VkInstance, VkPhysicalDevice, VkDevice, VkQueue). vkformer destroys
 * none of them and never waits for the whole device; free the context before destroying
 * them. */
typedef struct vkf_borrowed_vulkan {
  uint32_t struct_size;  /* sizeof(vkf_borrowed_vulkan) */
  void* instance;
  uint32_t api_version;  /* the instance's VkApplicationInfo::apiVersion (1.1 or newer) */
  void* physical_device;
  void* device;
  uint32_t queue_family; /* a family with compute */
  void* queue;
  const void* enabled_features; /* the VkPhysicalDeviceFeatures2 the device was created with, or NULL */
  const char* const* enabled_extensions; /* the device extensions it was created with */
  uint32_t enabled_extension_count;
  void* get_instance_proc_addr; /* the app's PFN_vkGetInstanceProcAddr, or NULL for the system loader's */
  /* Called around each of vkformer's queue submissions, so it never submits while the
   * app does (both NULL: an internal lock, for a queue the app does not use itself). */
  void (*lock_queue)(void* user);
  void (*unlock_queue)(void* user);
  void* user;
} vkf_borrowed_vulkan;

VKF_API vkf_status vkf_context_create_borrowed(const vkf_borrowed_vulkan* borrowed, vkf_context** context);

/* Device memory in vkformer's live buffers now, and the most it has held. */
VKF_API vkf_status vkf_context_memory(const vkf_context* context, uint64_t* allocated, uint64_t* peak);

/* The chosen device's name, as vkf_device_name. */
VKF_API vkf_status vkf_context_device_name(const vkf_context* context, char* name, size_t capacity,
                                           size_t* needed);

/* Loads a model directory (config.json, model.safetensors, and vocab.json for text). */
VKF_API vkf_status vkf_model_load(vkf_context* context, const char* directory, vkf_precision precision,
                                  vkf_model** model);
VKF_API void vkf_model_free(vkf_model* model);

VKF_API vkf_status vkf_session_create(vkf_model* model, vkf_session** session);
/* A job still running on the session is cancelled and waited for (its handle stays
 * valid until vkf_job_free). */
VKF_API void vkf_session_free(vkf_session* session);
/* Compiles every pipeline the session's model uses (at load time, so the first request
 * does not stall a frame); the on-disk caches keep them for the next run. */
VKF_API vkf_status vkf_session_warmup(vkf_session* session);

typedef struct vkf_generate_options {
  uint32_t struct_size;    /* sizeof(vkf_generate_options) */
  uint32_t max_new_tokens; /* 0: as many as the model's positions allow */
  uint32_t beam;           /* > 1: beam search of this width */
  float length_penalty;    /* beam: score / length^length_penalty */
  float temperature;       /* > 0: sampling */
  uint32_t top_k;          /* sampling: the k most likely tokens (0: all) */
  float top_p;             /* sampling: the smallest set holding this much probability */
  uint64_t seed;
  float submit_budget_ms;  /* greedy: the GPU time one submit may take (default 2 ms; 0: no budget) */
} vkf_generate_options;

VKF_API vkf_generate_options vkf_generate_options_default(void);

/* Token ids in, token ids out: the ids generated after BOS (EOS included when produced)
 * into tokens[capacity]; *count receives how many there are. options may be NULL. */
VKF_API vkf_status vkf_generate(vkf_session* session, const uint32_t* source, size_t source_length,
                                const vkf_generate_options* options, uint32_t* tokens, size_t capacity,
                                size_t* count);

/* Text in, text out with the model's tokenizer (its vocab.json): the translation of
 * `text` (UTF-8) into out[capacity], NUL-terminated; *needed (may be NULL) receives the
 * bytes it takes with its NUL. options may be NULL. */
VKF_API vkf_status vkf_translate(vkf_session* session, const char* text, const vkf_generate_options* options,
                                 char* out, size_t capacity, size_t* needed);

/* Non-blocking use, for a frame loop: a job runs a translation or a generation on a
 * thread of its own and the calls below never wait for the GPU (except vkf_job_wait,
 * up to its timeout, and vkf_job_free of a running job, which cancels it and waits).
 * A session runs one job at a time; while it does, other calls on it fail. */
typedef struct vkf_job vkf_job;

VKF_API vkf_status vkf_translate_start(vkf_session* session, const char* text, const vkf_generate_options* options,
                                       vkf_job** job);
VKF_API vkf_status vkf_generate_start(vkf_session* session, const uint32_t* source, size_t source_length,
                                      const vkf_generate_options* options, vkf_job** job);
/* VKF_PENDING while the job runs; once it has finished, its outcome: VKF_OK,
 * VKF_ERROR_CANCELLED or VKF_ERROR_FAILED (the message: vkf_last_error after this call). */
VKF_API vkf_status vkf_job_poll(vkf_job* job);
/* As vkf_job_poll, after waiting at most timeout_ms for the job to finish. */
VKF_API vkf_status vkf_job_wait(vkf_job* job, uint32_t timeout_ms);
/* Asks the job to stop; from any thread. It ends with VKF_ERROR_CANCELLED at its next
 * step (a step already on the GPU finishes first). */
VKF_API vkf_status vkf_job_cancel(vkf_job* job);
/* A finished job's result, as vkf_translate and vkf_generate give it; VKF_PENDING while it runs. */
VKF_API vkf_status vkf_job_text(vkf_job* job, char* out, size_t capacity, size_t* needed);
VKF_API vkf_status vkf_job_tokens(vkf_job* job, uint32_t* tokens, size_t capacity, size_t* count);
/* Cancels a running job, waits for it to end, and frees it. Accepts NULL. */
VKF_API void vkf_job_free(vkf_job* job);

/* How many times the calling thread has waited for the GPU inside vkformer: a frame
 * loop can check that its own calls never do. */
VKF_API uint64_t vkf_blocking_waits_on_this_thread(void);

#ifdef __cplusplus
}
#endif

#endif /* VKFORMER_VKFORMER_H */
