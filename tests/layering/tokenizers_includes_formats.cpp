// The control for tokenizers_includes_graph.cpp: the tokenizers' headers and the formats below them.
#include "bart_tokenizer.hpp"
#include "config_reader.hpp"
#include "marian_tokenizer.hpp"
