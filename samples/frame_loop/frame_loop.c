/* A game's frame loop with vkformer in it. The "game" creates its own Vulkan instance,
 * device and queue (as its renderer would), lends them to vkformer, and runs at 60
 * frames per second while date strings arrive over time. Each frame it starts a
 * translation when one is waiting and the session is free, polls the running one, and
 * sleeps out the rest of its 16.7 ms. vkformer's calls inside a frame never wait for
 * the GPU: the job does its waiting on its own thread; this program checks that.
 * Given a decoder-only model (GPT-2, Llama) it instead continues a prompt and streams the
 * completion into its frames word by word: the job's per-token callback (on the job's
 * thread) appends each piece of text, and each frame shows what has arrived.
 *   frame_loop MODEL_DIR [FRAMES] [PROMPT]   (samples/dates, 300 frames = 5 s)   */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <vkformer/vkformer.h>
#include <vulkan/vulkan.h>

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static void sleep_ms(double ms) {
  if (ms <= 0) return;
  struct timespec t = {(time_t)(ms / 1e3), (long)((ms - (time_t)(ms / 1e3) * 1e3) * 1e6)};
  nanosleep(&t, NULL);
}

/* The game's own Vulkan objects: the first device, a queue family with compute. */
typedef struct {
  VkInstance instance;
  VkPhysicalDevice physical;
  VkDevice device;
  VkQueue queue;
  uint32_t family;
  VkPhysicalDeviceFeatures2 features;
  VkPhysicalDevice16BitStorageFeatures storage16;
} Game;

static int game_vulkan(Game* g) {
  VkApplicationInfo app = {VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.pApplicationName = "frame_loop";
  app.apiVersion = VK_API_VERSION_1_1;
  VkInstanceCreateInfo ci = {VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  ci.pApplicationInfo = &app;
  if (vkCreateInstance(&ci, NULL, &g->instance) != VK_SUCCESS) return 0;
  uint32_t n = 1;
  if (vkEnumeratePhysicalDevices(g->instance, &n, &g->physical) < 0 || n == 0) return 0;
  VkQueueFamilyProperties families[16];
  n = 16;
  vkGetPhysicalDeviceQueueFamilyProperties(g->physical, &n, families);
  for (g->family = 0; g->family < n && !(families[g->family].queueFlags & VK_QUEUE_COMPUTE_BIT); ++g->family) {
  }
  if (g->family == n) return 0;
  float priority = 1.0f;
  VkDeviceQueueCreateInfo q = {VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  q.queueFamilyIndex = g->family;
  q.queueCount = 1;
  q.pQueuePriorities = &priority;
  memset(&g->storage16, 0, sizeof g->storage16);
  g->storage16.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES;
  memset(&g->features, 0, sizeof g->features);
  g->features.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2;
  g->features.pNext = &g->storage16;
  VkDeviceCreateInfo d = {VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
  d.pNext = &g->features;
  d.queueCreateInfoCount = 1;
  d.pQueueCreateInfos = &q;
  if (vkCreateDevice(g->physical, &d, NULL, &g->device) != VK_SUCCESS) return 0;
  vkGetDeviceQueue(g->device, g->family, 0, &g->queue);
  return 1;
}

/* The completion so far, shared by the job's thread (on_token) and the frames. */
typedef struct {
  pthread_mutex_t lock;
  char text[4096];
  size_t length;
} Stream;

/* Called with each token's whole characters, then once more with VKF_TOKEN_END and
 * the rest of the text (the last word, held back until the output ended). */
static int on_token(void* user, size_t output, uint32_t token, const char* piece, size_t n) {
  Stream* s = (Stream*)user;
  (void)output, (void)token;
  pthread_mutex_lock(&s->lock); /* held for a copy: a frame never waits long, and never for the GPU */
  if (piece && s->length + n < sizeof s->text) {
    memcpy(s->text + s->length, piece, n);
    s->length += n;
    s->text[s->length] = 0;
  }
  pthread_mutex_unlock(&s->lock);
  return 0;
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr,
            "usage: %s MODEL_DIR [FRAMES [PROMPT]]\n"
            "  an encoder-decoder (samples/dates): translations arriving as the frames run;\n"
            "  a decoder-only model with a tokenizer: PROMPT's completion (default \"Once upon a time\")\n"
            "  streamed word by word into FRAMES frames at 60 per second (default 300)\n",
            argv[0]);
    return 2;
  }
  const int frames = argc > 2 ? atoi(argv[2]) : 300;
  static const char* inputs[] = {"the 3rd of March 1998", "3/3/98", "Tuesday, July 4, 2023", "25.12.1969",
                                 "1998年3月3日", "March 3, 1998"};
  const int n_inputs = (int)(sizeof inputs / sizeof inputs[0]);
  Game g = {0};
  if (!game_vulkan(&g)) {
    fprintf(stderr, "the game could not create its Vulkan device\n");
    return 1;
  }
  vkf_borrowed_vulkan b = {0};
  b.struct_size = sizeof b;
  b.instance = g.instance;
  b.api_version = VK_API_VERSION_1_1;
  b.physical_device = g.physical;
  b.device = g.device;
  b.queue_family = g.family;
  b.queue = g.queue;
  b.enabled_features = &g.features;
  vkf_context* context = NULL;
  vkf_model* model = NULL;
  vkf_session* session = NULL;
  int status = 1;
  if (vkf_context_create_borrowed(&b, &context) != VKF_OK || vkf_model_load(context, argv[1], VKF_PRECISION_FP32, &model) != VKF_OK ||
      vkf_session_create(model, &session) != VKF_OK) {
    fprintf(stderr, "vkformer: %s\n", vkf_last_error());
    goto done;
  }
  vkf_model_info info;
  memset(&info, 0, sizeof info);
  info.struct_size = sizeof info;
  if (vkf_model_info_get(model, &info) != VKF_OK) {
    fprintf(stderr, "vkformer: %s\n", vkf_last_error());
    goto done;
  }
  if (info.decoder_only) { /* stream a completion into the frames */
    static Stream stream = {PTHREAD_MUTEX_INITIALIZER, {0}, 0};
    const char* prompt = argc > 3 ? argv[3] : "Once upon a time";
    vkf_generate_options o = vkf_generate_options_default(); /* the model's default length */
    o.submit_budget_ms = 0.01f; /* a token per submit: words arrive one by one, not in bursts of steps */
    o.on_token = on_token;
    o.on_token_user = &stream;
    const uint64_t waits_before = vkf_blocking_waits_on_this_thread();
    vkf_job* job = NULL;
    size_t shown = 0;
    int updates = 0, finished_frame = -1, whole = 0;
    double worst = 0;
    for (int frame = 0; frame < frames; ++frame) {
      const double start = now_ms();
      if (frame == 0 && vkf_translate_start(session, prompt, &o, &job) != VKF_OK) {
        fprintf(stderr, "vkf_translate_start: %s\n", vkf_last_error());
        goto done;
      }
      pthread_mutex_lock(&stream.lock);
      if (stream.length > shown) { /* the words that arrived since the last frame */
        printf("frame %4d: +\"%.*s\"\n", frame, (int)(stream.length - shown), stream.text + shown);
        shown = stream.length;
        ++updates;
      }
      pthread_mutex_unlock(&stream.lock);
      if (job && vkf_job_poll(job) != VKF_PENDING) {
        char out[4096];
        if (vkf_job_text(job, out, sizeof out, NULL) == VKF_OK) {
          printf("frame %4d: completion of \"%s\": \"%s\"\n", frame, prompt, out);
          pthread_mutex_lock(&stream.lock); /* the job has ended: every piece is in */
          whole = strcmp(out, stream.text) == 0;
          pthread_mutex_unlock(&stream.lock);
        } else
          printf("frame %4d: the completion failed: %s\n", frame, vkf_last_error());
        vkf_job_free(job);
        job = NULL;
        finished_frame = frame;
      }
      const double spent = now_ms() - start;
      if (spent > worst) worst = spent;
      sleep_ms(1000.0 / 60 - spent);
    }
    vkf_job_free(job);
    const uint64_t waits = vkf_blocking_waits_on_this_thread() - waits_before;
    printf("%d frames, the completion streamed in %d frames, done at frame %d; the streamed text %s the "
           "completion; worst frame %.3f ms; waits for the GPU inside frames: %llu\n",
           frames, updates, finished_frame, whole ? "is" : "IS NOT", worst, (unsigned long long)waits);
    status = waits == 0 && updates > 1 && finished_frame >= 0 && whole ? 0 : 1;
    goto done;
  }
  /* Loading is done before the loop; from here every call is made inside a frame. */
  const uint64_t waits_before = vkf_blocking_waits_on_this_thread();
  vkf_job* job = NULL;
  int next_input = 0, arrived = 0, done_count = 0, started_frame = 0;
  double worst = 0, total = 0;
  for (int frame = 0; frame < frames; ++frame) {
    const double start = now_ms();
    if (frame % 20 == 0 && arrived < n_inputs) ++arrived; /* a new input every third of a second */
    if (!job && next_input < arrived) {
      if (vkf_translate_start(session, inputs[next_input], NULL, &job) != VKF_OK) {
        fprintf(stderr, "vkf_translate_start: %s\n", vkf_last_error());
        goto done;
      }
      started_frame = frame;
    }
    if (job) {
      vkf_status s = vkf_job_poll(job);
      if (s != VKF_PENDING) {
        char out[256];
        if (s == VKF_OK && vkf_job_text(job, out, sizeof out, NULL) == VKF_OK)
          printf("frame %4d: %-24s -> %s (started at frame %d)\n", frame, inputs[next_input], out, started_frame);
        else
          printf("frame %4d: %s failed: %s\n", frame, inputs[next_input], vkf_last_error());
        vkf_job_free(job);
        job = NULL;
        ++next_input;
        ++done_count;
      }
    }
    const double spent = now_ms() - start; /* the frame's own work, vkformer's calls included */
    if (spent > worst) worst = spent;
    total += spent;
    sleep_ms(1000.0 / 60 - spent);
  }
  vkf_job_free(job);
  const uint64_t waits = vkf_blocking_waits_on_this_thread() - waits_before;
  printf("%d frames, %d of %d translations done; frame work: mean %.3f ms, worst %.3f ms; "
         "waits for the GPU inside frames: %llu\n",
         frames, done_count, n_inputs, total / frames, worst, (unsigned long long)waits);
  status = waits == 0 && done_count > 0 ? 0 : 1;
done:
  vkf_session_free(session);
  vkf_model_free(model);
  vkf_context_free(context);
  vkDestroyDevice(g.device, NULL); /* the game's own, after vkformer is gone */
  vkDestroyInstance(g.instance, NULL);
  return status;
}
