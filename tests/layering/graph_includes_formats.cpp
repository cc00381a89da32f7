// Compiled with the graph's include paths, this must fail: the forward pass sees the
// public API only, never a file format (families map checkpoints onto its weights).
#include "safetensors.hpp"
