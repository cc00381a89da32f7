/* vkformer.h is C99: this file is compiled as C with -std=c99 -pedantic -Werror, and
 * exercises every type and function declaration from C. */
#include <vkformer/vkformer.h>

int vkf_test_c99_header(void);
int vkf_test_c99_header(void) {
  vkf_context_options co = vkf_context_options_default();
  vkf_generate_options go = vkf_generate_options_default();
  vkf_context* context = 0;
  vkf_model_info info;
  size_t count = 0;
  vkf_status s = vkf_context_create(0, 0); /* NULL out-pointer: an error, not a crash */
  info.struct_size = sizeof info;
  (void)context;
  return (s == VKF_ERROR_INVALID_ARGUMENT && co.struct_size == sizeof co && go.struct_size == sizeof go &&
          vkf_model_info_get(0, &info) == VKF_ERROR_INVALID_ARGUMENT &&
          vkf_tokenize(0, "x", 0, 0, &count) == VKF_ERROR_INVALID_ARGUMENT &&
          vkf_detokenize(0, 0, 0, 0, 0, &count) == VKF_ERROR_INVALID_ARGUMENT &&
          vkf_generate_batch(0, 0, 0, 0, 0, 0, 0, 0, &count) == VKF_ERROR_INVALID_ARGUMENT &&
          vkf_abi_version() == VKF_ABI_VERSION)
             ? 1
             : 0;
}
