// Compiled as the vkformer command is, this must fail: the CLI is a user of the public
// API, like any application, and cannot reach the library's private headers.
#include "model/model_impl.hpp"
