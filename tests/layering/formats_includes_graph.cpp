// Compiled with the formats' include paths, this must fail: file readers know nothing of
// the forward pass.
#include "sublayer.hpp"
