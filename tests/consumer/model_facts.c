/* What an app developer does with the C API, using only the installed header: read the
 * model's facts, size the id and token buffers from them (never provoking
 * VKF_ERROR_BUFFER_TOO_SMALL; a text's size is asked first), tokenize three sources, translate them as one batch,
 * detokenize each output, and tell a missing model, bad input and a memory budget apart
 * by status. tests/consumer/run.sh builds it with pkg-config against the installed
 * package and runs it on the date sample.
 *   model_facts MODEL_DIR                                                             */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vkformer/vkformer.h>

static int failed(const char* what, vkf_status got, vkf_status want) {
  fprintf(stderr, "FAIL: %s: status %d, expected %d (%s)\n", what, (int)got, (int)want, vkf_last_error());
  return 1;
}

/* The three ways loading or running can go wrong that an app handles differently. */
static int statuses_tell_failures_apart(vkf_context* context, vkf_session* session, const vkf_model_info* info,
                                        const char* model_dir) {
  vkf_model* model = NULL;
  vkf_context* small = NULL;
  vkf_context_options options = vkf_context_options_default();
  vkf_status s;
  uint32_t bad_source[2], tokens[8];
  size_t count = 0;
  int errors = 0;

  s = vkf_model_load(context, "/nonexistent/vkformer-model", VKF_PRECISION_FP32, &model);
  if (s != VKF_ERROR_NOT_FOUND) errors += failed("a missing model directory", s, VKF_ERROR_NOT_FOUND);
  else printf("missing model: VKF_ERROR_NOT_FOUND (%s)\n", vkf_last_error());
  vkf_model_free(model);

  bad_source[0] = 4;
  bad_source[1] = info->source_vocab_size; /* one past the vocabulary */
  s = vkf_generate(session, bad_source, 2, NULL, tokens, sizeof tokens / sizeof tokens[0], &count);
  if (s != VKF_ERROR_INVALID_INPUT) errors += failed("a source id outside the vocabulary", s, VKF_ERROR_INVALID_INPUT);
  else printf("bad input: VKF_ERROR_INVALID_INPUT (%s)\n", vkf_last_error());

  options.memory_limit = 64 * 1024; /* far less than the model's weights */
  s = vkf_context_create(&options, &small);
  if (s != VKF_OK) return errors + failed("vkf_context_create with a memory limit", s, VKF_OK);
  model = NULL;
  s = vkf_model_load(small, model_dir, VKF_PRECISION_FP32, &model);
  if (s != VKF_ERROR_OUT_OF_MEMORY) errors += failed("a model over the memory budget", s, VKF_ERROR_OUT_OF_MEMORY);
  else printf("over budget: VKF_ERROR_OUT_OF_MEMORY (%s)\n", vkf_last_error());
  vkf_model_free(model);
  vkf_context_free(small);
  return errors;
}

int main(int argc, char** argv) {
  static const char* const texts[3] = {"the 3rd of March 1998", "25.12.1969", "Tuesday, July 4, 2023"};
  vkf_context* context = NULL;
  vkf_model* model = NULL;
  vkf_session* session = NULL;
  vkf_model_info info;
  vkf_generate_options options = vkf_generate_options_default();
  uint32_t* ids[3] = {NULL, NULL, NULL};
  const uint32_t* sources[3];
  size_t lengths[3], counts[3], total = 0, at = 0, i;
  uint32_t* tokens = NULL;
  char* text = NULL;
  vkf_status s;
  int errors = 0;

  if (argc != 2) {
    fprintf(stderr, "usage: %s MODEL_DIR\n", argv[0]);
    return 2;
  }
  if ((s = vkf_context_create(NULL, &context)) != VKF_OK) return failed("vkf_context_create", s, VKF_OK);
  if ((s = vkf_model_load(context, argv[1], VKF_PRECISION_FP32, &model)) != VKF_OK) {
    errors += failed("vkf_model_load", s, VKF_OK);
    goto done;
  }
  memset(&info, 0, sizeof info);
  info.struct_size = sizeof info;
  if ((s = vkf_model_info_get(model, &info)) != VKF_OK || !info.has_tokenizer) {
    errors += failed("vkf_model_info_get (a model with a tokenizer)", s, VKF_OK);
    goto done;
  }
  printf("%s: %s, vocabularies %u and %u, %u positions, eos %u\n", argv[1], info.architecture,
         (unsigned)info.source_vocab_size, (unsigned)info.target_vocab_size, (unsigned)info.max_positions,
         (unsigned)info.eos_id);
  if ((s = vkf_session_create(model, &session)) != VKF_OK) {
    errors += failed("vkf_session_create", s, VKF_OK);
    goto done;
  }

  /* Buffers sized from the facts: a source holds at most max_positions ids, and each
   * output at most max_new_tokens tokens. */
  options.max_new_tokens = 16 < info.max_positions ? 16 : info.max_positions;
  for (i = 0; i < 3; ++i) {
    ids[i] = malloc(info.max_positions * sizeof(uint32_t));
    if (!ids[i]) goto done;
    s = vkf_tokenize(model, texts[i], ids[i], info.max_positions, &lengths[i]);
    if (s != VKF_OK) {
      errors += failed("vkf_tokenize", s, VKF_OK);
      goto done;
    }
    sources[i] = ids[i];
  }
  tokens = malloc(3 * options.max_new_tokens * sizeof(uint32_t));
  if (!tokens) goto done;
  s = vkf_generate_batch(session, sources, lengths, 3, &options, tokens, 3 * options.max_new_tokens, counts, &total);
  if (s != VKF_OK) {
    errors += failed("vkf_generate_batch", s, VKF_OK);
    goto done;
  }
  for (i = 0; i < 3; ++i) {
    size_t needed = 0;
    vkf_detokenize(model, tokens + at, counts[i], NULL, 0, &needed); /* the text's size, its NUL included */
    free(text);
    text = malloc(needed ? needed : 1);
    if (!text) goto done;
    s = vkf_detokenize(model, tokens + at, counts[i], text, needed, &needed);
    if (s != VKF_OK) {
      errors += failed("vkf_detokenize", s, VKF_OK);
      goto done;
    }
    printf("%s -> %s\n", texts[i], text);
    at += counts[i];
  }
  if (at != total) errors += failed("the outputs' counts add up to the total", VKF_ERROR_FAILED, VKF_OK);
  errors += statuses_tell_failures_apart(context, session, &info, argv[1]);

done:
  for (i = 0; i < 3; ++i) free(ids[i]);
  free(tokens);
  free(text);
  vkf_session_free(session);
  vkf_model_free(model);
  vkf_context_free(context);
  if (errors == 0) printf("model facts, batch of three, statuses: all as expected\n");
  return errors == 0 ? 0 : 1;
}
