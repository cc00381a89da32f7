#pragma once
// SentencePiece's precompiled character map (a model file's normalizer_spec and
// denormalizer_spec): checked in our own code before libsentencepiece sees it, since the
// library reads it without bounds checks (a malformed one crashed it). T5-family and many
// SentencePiece models ship real ones, so they are validated, not refused.
#include <string>
#include <string_view>

namespace vkf::model {

// Throws vkf::Error naming `where` when the model file `proto` (a serialized ModelProto)
// is not a well-formed protocol buffer at its top level or in its normalizer specs, or
// holds a character map whose lookups could leave it: the trie's size field past the
// blob, a trie that is not whole 256-unit blocks, a reachable unit's child or value out of
// bounds, or a replacement string without its NUL inside the blob.
void check_precompiled_charsmaps(const std::string& proto, const std::string& where);

}  // namespace vkf::model
