// Compiled with the tokenizers' include paths, this must fail: text to ids needs no GPU graph.
#include "decoder_graph.hpp"
