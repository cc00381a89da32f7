#pragma once
// A SentencePiece model file (Marian's source.spm and target.spm, Llama 2's
// tokenizer.model) loaded through Debian's libsentencepiece, bounded in size first.
#include <memory>
#include <string>

#include "vkformer/model_files.hpp"

namespace sentencepiece { class SentencePieceProcessor; }

namespace vkf::model {

// The model's file `name`; errors name it. without_dummy_prefix: its normalizer's
// add_dummy_prefix turned off, as transformers' non-legacy LlamaTokenizer loads it (it
// adds the word-boundary mark itself, once per text instead of once per piece of text).
std::unique_ptr<sentencepiece::SentencePieceProcessor> load_sentencepiece(const ModelFiles& files,
                                                                          const std::string& name,
                                                                          bool without_dummy_prefix = false);

}  // namespace vkf::model
