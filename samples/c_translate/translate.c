/* The simplest use of vkformer's C API: load a model, translate a string, print it.
 *   cc translate.c $(pkg-config --cflags --libs vkformer) -o translate
 *   ./translate samples/dates "the 3rd of March 1998"                          */
#include <stdio.h>
#include <vkformer/vkformer.h>

static int fail(const char* what) {
  fprintf(stderr, "%s: %s\n", what, vkf_last_error());
  return 1;
}

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s MODEL_DIR TEXT\n", argv[0]);
    return 2;
  }
  vkf_context* context = NULL;
  vkf_model* model = NULL;
  vkf_session* session = NULL;
  char name[256], out[1024];
  int status = 1;

  if (vkf_context_create(NULL, &context) != VKF_OK) return fail("vkf_context_create");
  if (vkf_context_device_name(context, name, sizeof name, NULL) == VKF_OK)
    printf("vkformer %s on %s\n", vkf_version(), name);
  if (vkf_model_load(context, argv[1], VKF_PRECISION_FP32, &model) != VKF_OK) {
    status = fail("vkf_model_load");
  } else if (vkf_session_create(model, &session) != VKF_OK) {
    status = fail("vkf_session_create");
  } else if (vkf_translate(session, argv[2], NULL, out, sizeof out, NULL) != VKF_OK) {
    status = fail("vkf_translate");
  } else {
    printf("%s -> %s\n", argv[2], out);
    status = 0;
  }
  vkf_session_free(session); /* each accepts NULL */
  vkf_model_free(model);
  vkf_context_free(context);
  return status;
}
