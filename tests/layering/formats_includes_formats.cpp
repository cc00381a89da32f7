// The control for formats_includes_graph.cpp: the formats' own headers and the public API.
#include "config_reader.hpp"
#include "expected_tensors.hpp"
#include "safetensors.hpp"
#include "vkformer/model.hpp"
