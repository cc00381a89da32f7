// The control for families_includes_decoding.cpp: a family sees the formats and the graph.
#include "encoder_layer.hpp"
#include "family.hpp"
#include "safetensors.hpp"
#include "checkpoint.hpp"
