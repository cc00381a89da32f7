// Compiled with the families' include paths, this must fail: a family maps its files onto
// the graph's description, and decoding runs above every family.
#include "decoding.hpp"
