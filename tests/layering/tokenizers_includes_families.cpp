// Compiled with the tokenizers' include paths, this must fail: text to ids knows no
// family (the registry picks a directory's tokenizer, families/registry.cpp).
#include "family.hpp"
