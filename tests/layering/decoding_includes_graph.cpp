// The control for decoding_includes_families.cpp: decoding's headers and the graph below them.
#include "decoding.hpp"
#include "hf_decoding.hpp"
#include "decoder_graph.hpp"
