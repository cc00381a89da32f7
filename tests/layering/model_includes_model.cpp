// The control for model_includes_gpu.cpp: the model layer's own headers and the public
// API compile with the same include paths.
#include "seq2seq_graph.hpp"
#include "vkformer/ops.hpp"
