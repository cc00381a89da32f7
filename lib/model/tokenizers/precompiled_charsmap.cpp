// The layout (sentencepiece's normalizer.cc and darts-clone, which it uses): a little-
// endian uint32 trie size in bytes, the trie (a double array of uint32 units), then the
// replacement strings, each NUL-terminated. A lookup starts at unit 0, moves to
// pos ^ offset(unit) and, for each input byte c, to pos ^ c, stopping when that unit's
// label is not c; a unit with a leaf gives, at its next position, the offset of a
// replacement string. Every unit a lookup can reach is visited here once.
#include "precompiled_charsmap.hpp"

#include <cstdint>
#include <cstring>
#include <vector>

#include "vkformer/error.hpp"

namespace vkf::model {

namespace {

// darts-clone's unit fields.
bool has_leaf(uint32_t u) { return (u >> 8) & 1; }
uint32_t value_of(uint32_t u) { return u & ((1u << 31) - 1); }
uint32_t label_of(uint32_t u) { return u & ((1u << 31) | 0xFF); }
uint32_t offset_of(uint32_t u) { return (u >> 10) << ((u & (1u << 9)) >> 6); }

void check_charsmap(std::string_view blob, const std::string& where) {
  auto fail = [&](const std::string& why) {
    throw Error("tokenizer " + where + ": its precompiled character map " + why +
                    " (a malformed map would be read out of bounds)",
                ErrorKind::InvalidInput);
  };
  if (blob.empty()) return;  // none: the normalizer's identity
  if (blob.size() <= 4) fail("is shorter than its size field");
  uint32_t trie_bytes = 0;
  for (int i = 3; i >= 0; --i) trie_bytes = (trie_bytes << 8) | uint8_t(blob[size_t(i)]);
  if (trie_bytes > blob.size() - 4) fail("claims a trie larger than the map");
  const size_t n = trie_bytes / 4;
  // Lookups read pos ^ c for every byte c: the trie is whole blocks of 256 units, as
  // darts-clone builds it, and each block a lookup enters must be there.
  if (n == 0 || n % 256 != 0 || trie_bytes % 4 != 0) fail("holds a trie that is not whole 256-unit blocks");
  std::vector<uint32_t> units(n);
  std::memcpy(units.data(), blob.data() + 4, n * 4);  // little-endian hosts: the file's order
  const std::string_view strings = blob.substr(4 + trie_bytes);
  auto check_value = [&](uint32_t at) {
    if (at >= strings.size() || strings.find('\0', at) == std::string_view::npos)
      fail("points a replacement at byte " + std::to_string(at) + ", past its strings or without their NUL");
  };
  std::vector<bool> seen(n, false);
  std::vector<size_t> todo;
  const size_t root = size_t(offset_of(units[0]));
  if (root >= n) fail("starts outside its trie");
  todo.push_back(root);
  seen[root] = true;
  while (!todo.empty()) {
    const size_t pos = todo.back();
    todo.pop_back();
    for (uint32_t c = 0; c < 256; ++c) {
      const size_t child = pos ^ c;  // inside pos's block, which exists
      const uint32_t u = units[child];
      if (label_of(u) != c) continue;
      const size_t next = child ^ size_t(offset_of(u));
      if (next >= n) fail("has a unit whose next position is outside the trie");
      if (has_leaf(u)) check_value(value_of(units[next]));
      if (!seen[next]) {
        seen[next] = true;
        todo.push_back(next);
      }
    }
  }
}

bool read_varint(const std::string& s, size_t& at, size_t end, uint64_t& v) {
  v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (at >= end) return false;
    const uint8_t b = uint8_t(s[at++]);
    v |= uint64_t(b & 0x7f) << shift;
    if (!(b & 0x80)) return true;
  }
  return false;
}

// Calls f(field, begin, end) for each length-delimited field of the message in
// [begin, end); false when the bytes are not a well-formed message.
template <class F>
bool for_each_bytes_field(const std::string& s, size_t begin, size_t end, F&& f) {
  for (size_t at = begin; at < end;) {
    uint64_t key = 0, len = 0;
    if (!read_varint(s, at, end, key)) return false;
    switch (key & 7) {
      case 0:
        if (!read_varint(s, at, end, len)) return false;
        break;
      case 1:
        if (end - at < 8) return false;
        at += 8;
        break;
      case 5:
        if (end - at < 4) return false;
        at += 4;
        break;
      case 2:
        if (!read_varint(s, at, end, len) || len > end - at) return false;
        f(key >> 3, at, size_t(at + len));
        at += len;
        break;
      default: return false;  // groups (3, 4) are not in a SentencePiece model
    }
  }
  return true;
}

}  // namespace

void check_precompiled_charsmaps(const std::string& proto, const std::string& where) {
  bool well_formed = true;
  const bool top = for_each_bytes_field(proto, 0, proto.size(), [&](uint64_t field, size_t begin, size_t end) {
    if (field != 3 && field != 10) return;  // normalizer_spec, denormalizer_spec
    well_formed &= for_each_bytes_field(proto, begin, end, [&](uint64_t inner, size_t b, size_t e) {
      if (inner == 2) check_charsmap(std::string_view(proto).substr(b, e - b), where);  // precompiled_charsmap
    });
  });
  if (!top || !well_formed)
    throw Error("tokenizer " + where + ": not a SentencePiece model (not a well-formed protocol buffer)",
                ErrorKind::InvalidInput);
}

}  // namespace vkf::model
