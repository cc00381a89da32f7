// Compiled with the graph's include paths, this must fail: the forward pass is every
// family's, and knows none of them.
#include "family.hpp"
