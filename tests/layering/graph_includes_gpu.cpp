// Compiled with the graph's include paths, this must fail: model code reaches
// the GPU through the public API only, never through lib/gpu's Vulkan headers.
#include "gpu/device.hpp"
