// The control for tokenizers_includes_families.cpp: a family makes its tokenizer, so it
// sees the tokenizers.
#include "bart_tokenizer.hpp"
#include "family.hpp"
