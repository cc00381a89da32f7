// The control for gpu_includes_ops.cpp: with the same include paths, the gpu layer's own
// headers and the public API compile, so the other probe fails for its include alone.
#include "memory.hpp"
#include "vkformer/context.hpp"
