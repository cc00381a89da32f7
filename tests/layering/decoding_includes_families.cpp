// Compiled with decoding's include paths, this must fail: decoding reads the model's
// description (graph/), never a family's file.
#include "family.hpp"
