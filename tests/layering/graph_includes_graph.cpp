// The control for graph_includes_gpu.cpp (and graph_includes_*): the graph's own headers and the public
// API compile with the same include paths.
#include "decoder_graph.hpp"
#include "vkformer/ops.hpp"
