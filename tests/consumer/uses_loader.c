/* The application's own Vulkan use, straight through the loader (libvulkan), in the
 * same program as vkformer: vkCreateInstance here must be the loader's. */
#include <stdio.h>
#include <vulkan/vulkan.h>

__attribute__((constructor)) static void create_an_instance_first(void) {
  VkInstanceCreateInfo info = {VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  VkInstance instance = VK_NULL_HANDLE;
  VkResult r = vkCreateInstance(&info, NULL, &instance);
  if (r != VK_SUCCESS) {
    fprintf(stderr, "the application's own vkCreateInstance failed: %d\n", (int)r);
    return;
  }
  vkDestroyInstance(instance, NULL);
  printf("the application's own Vulkan instance: created and destroyed through the loader\n");
}
