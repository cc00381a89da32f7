// Compiled with the gpu layer's include paths, this must fail: lib/gpu may not include
// an ops header (ops sits above gpu). tests/CMakeLists.txt runs it as a WILL_FAIL test.
#include "ops/grid.hpp"
