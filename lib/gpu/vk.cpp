#include "vk.hpp"

namespace vkf::gpu {

const char* result_name(VkResult r) {
  switch (r) {
#define CASE(x) \
  case x:       \
    return #x;
    CASE(VK_SUCCESS)
    CASE(VK_NOT_READY)
    CASE(VK_TIMEOUT)
    CASE(VK_INCOMPLETE)
    CASE(VK_ERROR_OUT_OF_HOST_MEMORY)
    CASE(VK_ERROR_OUT_OF_DEVICE_MEMORY)
    CASE(VK_ERROR_INITIALIZATION_FAILED)
    CASE(VK_ERROR_DEVICE_LOST)
    CASE(VK_ERROR_MEMORY_MAP_FAILED)
    CASE(VK_ERROR_LAYER_NOT_PRESENT)
    CASE(VK_ERROR_EXTENSION_NOT_PRESENT)
    CASE(VK_ERROR_FEATURE_NOT_PRESENT)
    CASE(VK_ERROR_INCOMPATIBLE_DRIVER)
    CASE(VK_ERROR_TOO_MANY_OBJECTS)
    CASE(VK_ERROR_FORMAT_NOT_SUPPORTED)
    CASE(VK_ERROR_FRAGMENTED_POOL)
    CASE(VK_ERROR_OUT_OF_POOL_MEMORY)
    CASE(VK_ERROR_INVALID_EXTERNAL_HANDLE)
    CASE(VK_ERROR_FRAGMENTATION)
    CASE(VK_PIPELINE_COMPILE_REQUIRED)
#undef CASE
    default:
      return "VK_ERROR_UNKNOWN";
  }
}

void throw_vk(VkResult r, const char* what) {
  std::string msg = std::string(what) + " failed: " + result_name(r);
  if (r == VK_ERROR_OUT_OF_DEVICE_MEMORY || r == VK_ERROR_OUT_OF_HOST_MEMORY)
    msg += " (the device or host is out of memory)";
  if (r == VK_ERROR_DEVICE_LOST) msg += " (the GPU stopped responding; a long dispatch may have hit a driver timeout)";
  throw Error(msg, r == VK_ERROR_OUT_OF_DEVICE_MEMORY || r == VK_ERROR_OUT_OF_HOST_MEMORY ? ErrorKind::OutOfMemory
                   : r == VK_ERROR_DEVICE_LOST                                              ? ErrorKind::DeviceLost
                                                                                            : ErrorKind::Failed);
}

}  // namespace vkf::gpu
