/* vkformer.h is C99: this file is compiled as C with -std=c99 -pedantic -Werror, and
 * exercises every type and function declaration from C. */
#include <vkformer/vkformer.h>

int vkf_test_c99_header(void);
int vkf_test_c99_header(void) {
  vkf_context_options co = vkf_context_options_default();
  vkf_generate_options go = vkf_generate_options_default();
  vkf_context* context = 0;
  vkf_status s = vkf_context_create(0, 0); /* NULL out-pointer: an error, not a crash */
  (void)context;
  return (s == VKF_ERROR_INVALID_ARGUMENT && co.struct_size == sizeof co && go.struct_size == sizeof go &&
          vkf_abi_version() == VKF_ABI_VERSION)
             ? 1
             : 0;
}
