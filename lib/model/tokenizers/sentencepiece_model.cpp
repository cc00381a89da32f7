#include "sentencepiece_model.hpp"

#include <sentencepiece_processor.h>

#include <cstdint>

#include "precompiled_charsmap.hpp"
#include "vkformer/error.hpp"

namespace vkf::model {

namespace {

// The largest SentencePiece model read: one holds each piece with its score and type
// (~20 bytes a piece), so a 250,000-piece multilingual model is ~5 MB; 64 MiB is far
// beyond any real one and bounds what a hostile file costs before the parse.
constexpr uint64_t kMaxSpmBytes = 64ull << 20;

// Protocol-buffer varints (the wire format of the model file).
bool read_varint(const std::string& s, size_t& at, uint64_t& v) {
  v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (at >= s.size()) return false;
    const uint8_t b = uint8_t(s[at++]);
    v |= uint64_t(b & 0x7f) << shift;
    if (!(b & 0x80)) return true;
  }
  return false;
}

void write_varint(std::string& out, uint64_t v) {
  for (; v >= 0x80; v >>= 7) out.push_back(char(0x80 | (v & 0x7f)));
  out.push_back(char(v));
}

// The ModelProto with normalizer_spec (field 3) merged with add_dummy_prefix = false (its
// field 3), as transformers' MergeFrom does: a field appended to a message overrides an
// earlier one, so the spec's bytes gain "field 3, varint 0" and a new length. A file that
// is not a protocol buffer is returned as it is, for the library's parse to refuse.
std::string without_dummy_prefix(const std::string& proto) {
  static const std::string kOff = {char(0x18), char(0x00)};  // field 3, wire type 0, value 0
  std::string out;
  bool found = false;
  for (size_t at = 0; at < proto.size();) {
    const size_t start = at;
    uint64_t key = 0, len = 0;
    if (!read_varint(proto, at, key)) return proto;
    switch (key & 7) {
      case 0:
        if (!read_varint(proto, at, len)) return proto;
        break;
      case 1: at += 8; break;
      case 5: at += 4; break;
      case 2:
        if (!read_varint(proto, at, len) || len > proto.size() - at) return proto;
        if (key >> 3 == 3) {  // normalizer_spec
          write_varint(out, key);
          write_varint(out, len + kOff.size());
          out.append(proto, at, len);
          out += kOff;
          at += len;
          found = true;
          continue;
        }
        at += len;
        break;
      default: return proto;
    }
    if (at > proto.size()) return proto;
    out.append(proto, start, at - start);
  }
  if (!found) out += std::string{char(0x1a), char(kOff.size())} + kOff;
  return out;
}

}  // namespace

std::unique_ptr<sentencepiece::SentencePieceProcessor> load_sentencepiece(const ModelFiles& files,
                                                                          const std::string& name,
                                                                          bool no_dummy_prefix) {
  std::string bytes = files.read(name, "SentencePiece model", kMaxSpmBytes);
  check_precompiled_charsmaps(bytes, files.where(name));  // before the library reads them unchecked
  if (no_dummy_prefix) bytes = without_dummy_prefix(bytes);
  auto sp = std::make_unique<sentencepiece::SentencePieceProcessor>();
  const auto status = sp->LoadFromSerializedProto(bytes);
  if (!status.ok()) throw Error("tokenizer " + files.where(name) + ": not a SentencePiece model (" + status.ToString() + ")");
  return sp;
}

}  // namespace vkf::model
