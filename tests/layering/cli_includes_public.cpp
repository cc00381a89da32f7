// The control for cli_includes_model.cpp: the public headers compile the same way.
#include "vkformer/vkformer.hpp"
