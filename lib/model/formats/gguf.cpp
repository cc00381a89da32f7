#include "gguf.hpp"

#include <algorithm>
#include <bit>
#include <cstring>

#include "mapped_file.hpp"
#include "vkformer/error.hpp"

namespace vkf::model {

namespace {

// ggml.h's types at llama.cpp 0c1e570 (the gguf package's GGML_QUANT_SIZES; Q8_1 as ggml
// lays it out, d and s as halves). Ids 4, 5, 31-33 and 36-38 were retired.
constexpr GgmlType kGgmlTypes[] = {
    {0, "F32", 1, 4},         {1, "F16", 1, 2},         {2, "Q4_0", 32, 18},      {3, "Q4_1", 32, 20},
    {6, "Q5_0", 32, 22},      {7, "Q5_1", 32, 24},      {8, "Q8_0", 32, 34},      {9, "Q8_1", 32, 36},
    {10, "Q2_K", 256, 84},    {11, "Q3_K", 256, 110},   {12, "Q4_K", 256, 144},   {13, "Q5_K", 256, 176},
    {14, "Q6_K", 256, 210},   {15, "Q8_K", 256, 292},   {16, "IQ2_XXS", 256, 66}, {17, "IQ2_XS", 256, 74},
    {18, "IQ3_XXS", 256, 98}, {19, "IQ1_S", 256, 50},   {20, "IQ4_NL", 32, 18},   {21, "IQ3_S", 256, 110},
    {22, "IQ2_S", 256, 82},   {23, "IQ4_XS", 256, 136}, {24, "I8", 1, 1},         {25, "I16", 1, 2},
    {26, "I32", 1, 4},        {27, "I64", 1, 8},        {28, "F64", 1, 8},        {29, "IQ1_M", 256, 56},
    {30, "BF16", 1, 2},       {34, "TQ1_0", 256, 54},   {35, "TQ2_0", 256, 66},   {39, "MXFP4", 32, 17},
};

constexpr uint32_t kLastValueType = uint32_t(GgufValueType::F64);

// The fewest bytes a value of type t takes in the file (an array's bounds its count).
uint64_t min_bytes(GgufValueType t) {
  switch (t) {
    case GgufValueType::U8: case GgufValueType::I8: case GgufValueType::Bool: return 1;
    case GgufValueType::U16: case GgufValueType::I16: return 2;
    case GgufValueType::U32: case GgufValueType::I32: case GgufValueType::F32: return 4;
    case GgufValueType::U64: case GgufValueType::I64: case GgufValueType::F64: return 8;
    case GgufValueType::String: return 8;  // its length
    case GgufValueType::Array: return 12;  // its element type and count
  }
  return 1;
}

bool is_scalar(GgufValueType t) { return t != GgufValueType::String && t != GgufValueType::Array; }

uint64_t little(const uint8_t* p, int bytes) {
  uint64_t v = 0;
  for (int k = bytes - 1; k >= 0; --k) v = (v << 8) | p[k];
  return v;
}

// A scalar of type t from its little-endian bytes.
GgufValue scalar(GgufValueType t, const uint8_t* p) {
  GgufValue v;
  v.type = t;
  const uint64_t n = min_bytes(t);
  const uint64_t bits = little(p, int(n));
  switch (t) {
    case GgufValueType::U8: case GgufValueType::U16: case GgufValueType::U32: case GgufValueType::U64:
      v.u = bits;
      break;
    case GgufValueType::Bool:
      v.u = bits;  // (0 or 1; anything else is refused where it is read)
      break;
    case GgufValueType::I8: v.i = int8_t(bits); break;
    case GgufValueType::I16: v.i = int16_t(bits); break;
    case GgufValueType::I32: v.i = int32_t(bits); break;
    case GgufValueType::I64: v.i = int64_t(bits); break;
    case GgufValueType::F32: v.f = std::bit_cast<float>(uint32_t(bits)); break;
    case GgufValueType::F64: v.f = std::bit_cast<double>(bits); break;
    default: break;
  }
  return v;
}

// The file read front to back, every read checked against what is left.
struct Reader {
  const uint8_t* p;
  uint64_t size, pos = 0;
  const std::string& label;

  [[noreturn]] void fail(const std::string& why) const { throw Error(label + ": " + why); }
  uint64_t left() const { return size - pos; }
  void need(uint64_t n, const std::string& what) const {
    if (n > left())
      fail("truncated: " + what + " at byte " + std::to_string(pos) + " needs " + std::to_string(n) + " bytes, " +
           std::to_string(left()) + " are left");
  }
  uint64_t number(int bytes, const std::string& what) {
    need(uint64_t(bytes), what);
    const uint64_t v = little(p + pos, bytes);
    pos += uint64_t(bytes);
    return v;
  }
  uint32_t u32(const std::string& what) { return uint32_t(number(4, what)); }
  uint64_t u64(const std::string& what) { return number(8, what); }
  std::string_view string(const std::string& what, uint64_t max) {
    const uint64_t n = u64(what + "'s length");
    if (n > max) fail(what + " is " + std::to_string(n) + " bytes long, more than the " + std::to_string(max) + " read");
    need(n, what);
    const std::string_view s(reinterpret_cast<const char*>(p + pos), n);
    pos += n;
    return s;
  }
  GgufValueType value_type(const std::string& what) {
    const uint32_t t = u32(what);
    if (t > kLastValueType) fail(what + " is " + std::to_string(t) + ", not one of GGUF's value types (0 to 12)");
    return GgufValueType(t);
  }

  GgufValue value(GgufValueType t, const std::string& what, uint32_t depth) {
    if (is_scalar(t)) {
      need(min_bytes(t), what);
      GgufValue v = scalar(t, p + pos);
      pos += min_bytes(t);
      return v;
    }
    GgufValue v;
    v.type = t;
    if (t == GgufValueType::String) {
      v.s = string(what, Gguf::kMaxStringBytes);
      return v;
    }
    v.element = value_type(what + "'s element type");
    v.count = u64(what + "'s count");
    // Each element takes at least min_bytes of the file: a count the rest of the file
    // cannot hold is refused before anything is allocated for it.
    if (v.count > left() / min_bytes(v.element))
      fail(what + " claims " + std::to_string(v.count) + " elements of type " + gguf_value_type_name(v.element) +
           ", more than the " + std::to_string(left()) + " bytes left can hold");
    if (is_scalar(v.element)) {
      v.raw = p + pos;
      pos += v.count * min_bytes(v.element);
    } else if (v.element == GgufValueType::String) {
      v.strings.reserve(v.count);
      for (uint64_t k = 0; k < v.count; ++k) v.strings.push_back(string(what + "[" + std::to_string(k) + "]", Gguf::kMaxStringBytes));
    } else {
      if (depth + 1 >= Gguf::kMaxArrayDepth)
        fail(what + " nests arrays more than " + std::to_string(Gguf::kMaxArrayDepth) + " deep");
      v.arrays.reserve(v.count);
      for (uint64_t k = 0; k < v.count; ++k)
        v.arrays.push_back(value(GgufValueType::Array, what + "[" + std::to_string(k) + "]", depth + 1));
    }
    return v;
  }
};

std::string quoted(std::string_view s) {
  std::string q = "'";
  for (char c : s.substr(0, 80)) q += (c >= 32 && c < 127) ? c : '?';
  return q + (s.size() > 80 ? "...'" : "'");
}

}  // namespace

const char* gguf_value_type_name(GgufValueType t) {
  static const char* const names[] = {"u8",   "i8",     "u16",   "i16", "u32", "i32", "f32",
                                      "bool", "string", "array", "u64", "i64", "f64"};
  return uint32_t(t) <= kLastValueType ? names[uint32_t(t)] : "?";
}

bool GgufValue::is_integer() const {
  return type != GgufValueType::F32 && type != GgufValueType::F64 && type != GgufValueType::Bool && is_scalar(type);
}

std::optional<uint64_t> GgufValue::as_unsigned() const {
  switch (type) {
    case GgufValueType::U8: case GgufValueType::U16: case GgufValueType::U32: case GgufValueType::U64: return u;
    case GgufValueType::I8: case GgufValueType::I16: case GgufValueType::I32: case GgufValueType::I64:
      return i < 0 ? std::nullopt : std::optional<uint64_t>(uint64_t(i));
    default: return std::nullopt;
  }
}

GgufValue GgufValue::item(uint64_t k) const {
  if (type != GgufValueType::Array || !raw || k >= count) throw Error("gguf: item " + std::to_string(k) + " of a value that has none");
  return scalar(element, raw + k * min_bytes(element));
}

std::optional<GgmlType> ggml_type(uint32_t id) {
  for (const GgmlType& t : kGgmlTypes)
    if (t.id == id) return t;
  return std::nullopt;
}

uint64_t GgufTensor::elements() const {
  uint64_t n = 1;
  for (uint64_t d : shape) n *= d;  // (checked not to overflow when read)
  return n;
}

Gguf::Gguf(const std::string& path) : label_("model file " + path) { map_and_parse(path); }

Gguf::Gguf(const ModelFiles& files, const std::string& name) : label_("model file " + files.where(name)) {
  if (!files.from_memory()) {
    map_and_parse(files.where(name));
    return;
  }
  if (!files.has(name)) throw Error(label_ + ": is not among the model's files", ErrorKind::NotFound);
  const std::string_view b = files.memory_file(name);  // the app's bytes, read where they are
  parse(reinterpret_cast<const uint8_t*>(b.data()), b.size());
}

Gguf::~Gguf() = default;

void Gguf::map_and_parse(const std::string& path) {
  mapping_ = std::make_unique<MappedFile>(path, label_);
  if (mapping_->size() == 0) throw Error(label_ + ": is empty, not a GGUF file");
  parse(mapping_->data(), mapping_->size());
}

void Gguf::parse(const uint8_t* bytes, uint64_t size) {
  size_ = size;
  Reader r{bytes, size, 0, label_};
  r.need(4, "the magic");
  if (std::memcmp(bytes, "GGUF", 4) != 0) r.fail("not a GGUF file (it does not start with \"GGUF\")");
  r.pos = 4;
  version_ = r.u32("the version");
  if (version_ == 0x02000000u || version_ == 0x03000000u)
    r.fail("a big-endian GGUF file (version " + std::to_string(__builtin_bswap32(version_)) +
           " written byte-swapped): vkformer reads little-endian files only");
  if (version_ == 1) r.fail("GGUF version 1 (llama.cpp's format before August 2023) is not read: versions 2 and 3 are");
  if (version_ != 2 && version_ != 3)
    r.fail("GGUF version " + std::to_string(version_) + " is not one vkformer reads (2 and 3)");
  const uint64_t tensor_count = r.u64("the tensor count"), kv_count = r.u64("the metadata count");
  // The least each takes (a key or name of one byte): counts past what the file can hold
  // are refused before anything is read for them.
  if (kv_count > r.left() / 14)
    r.fail("the header claims " + std::to_string(kv_count) + " metadata entries, more than the file's " +
           std::to_string(size) + " bytes can hold");
  if (tensor_count > r.left() / 33)
    r.fail("the header claims " + std::to_string(tensor_count) + " tensors, more than the file's " + std::to_string(size) +
           " bytes can hold");

  for (uint64_t k = 0; k < kv_count; ++k) {
    const std::string what = "metadata entry " + std::to_string(k);
    const std::string_view key = r.string(what + "'s key", 65535);
    if (key.empty()) r.fail(what + " has an empty key");
    const std::string name(key);
    const GgufValueType t = r.value_type("the type of " + quoted(key));
    GgufValue v = r.value(t, quoted(key), 0);
    if (!metadata_.emplace(name, std::move(v)).second) r.fail("metadata key " + quoted(key) + " appears twice");
  }
  if (const GgufValue* a = find("general.alignment")) {
    if (a->type != GgufValueType::U32) r.fail(std::string("general.alignment is a ") + gguf_value_type_name(a->type) + ", not a u32");
    if (a->u == 0 || !std::has_single_bit(a->u) || a->u > (1u << 16))
      r.fail("general.alignment is " + std::to_string(a->u) + ", not a power of two from 1 to 65536");
    alignment_ = a->u;
  }
  if (const GgufValue* parts = find("split.count")) {
    const auto n = parts->as_unsigned();
    if (!n || *n != 1)
      r.fail("the model is split across several files (split.count " +
             (n ? std::to_string(*n) : std::string("not a count")) +
             "): vkformer reads one file; join them first (llama.cpp's llama-gguf-split --merge)");
  }

  order_.reserve(tensor_count);
  for (uint64_t k = 0; k < tensor_count; ++k) {
    const std::string what = "tensor " + std::to_string(k);
    const std::string_view key = r.string(what + "'s name", kMaxNameBytes);
    if (key.empty()) r.fail(what + " has an empty name");
    const std::string name(key);
    auto bad = [&](const std::string& why) { r.fail("tensor " + quoted(key) + ": " + why); };
    GgufTensor t;
    const uint32_t dims = r.u32("the dimension count of " + quoted(key));
    if (dims == 0 || dims > kMaxDims) bad(std::to_string(dims) + " dimensions (1 to 4)");
    uint64_t elements = 1;
    for (uint32_t d = 0; d < dims; ++d) {
      const uint64_t n = r.u64("a dimension of " + quoted(key));
      if (n == 0) bad("a dimension of 0");
      if (__builtin_mul_overflow(elements, n, &elements)) bad("its dimensions' product overflows 64 bits");
      t.shape.push_back(n);
    }
    const uint32_t id = r.u32("the type of " + quoted(key));
    const auto type = ggml_type(id);
    if (!type) bad("type id " + std::to_string(id) + " is not one of ggml's tensor types");
    t.type = *type;
    if (t.shape[0] % t.type.values)
      bad("rows of " + std::to_string(t.shape[0]) + " values are not whole " + t.type.name + " blocks of " +
          std::to_string(t.type.values));
    if (__builtin_mul_overflow(elements / t.type.values, uint64_t(t.type.bytes), &t.bytes))
      bad("its size in bytes overflows 64 bits");
    t.offset = r.u64("the offset of " + quoted(key));
    if (t.offset % alignment_)
      bad("its offset " + std::to_string(t.offset) + " is not a multiple of the alignment " + std::to_string(alignment_));
    if (!tensors_.emplace(name, std::move(t)).second) r.fail("tensor name " + quoted(key) + " appears twice");
    order_.push_back(name);
  }

  // The data: from the next multiple of the alignment; every tensor inside the file and
  // none overlapping another.
  const uint64_t start = (r.pos + alignment_ - 1) / alignment_ * alignment_;
  const uint64_t data_bytes = start <= size ? size - start : 0;
  std::vector<std::pair<uint64_t, const std::string*>> by_offset;
  for (auto& [name, t] : tensors_) {
    if (t.offset > data_bytes || t.bytes > data_bytes - t.offset)
      r.fail("tensor " + quoted(name) + ": its " + std::to_string(t.bytes) + " bytes at offset " +
             std::to_string(t.offset) + " run past the file's end (" + std::to_string(data_bytes) +
             " bytes of data; truncated?)");
    t.data = bytes + start + t.offset;
    by_offset.emplace_back(t.offset, &name);
  }
  std::sort(by_offset.begin(), by_offset.end());
  for (size_t k = 1; k < by_offset.size(); ++k) {
    const GgufTensor& before = tensors_.at(*by_offset[k - 1].second);
    if (before.offset + before.bytes > by_offset[k].first)
      r.fail("tensors " + quoted(*by_offset[k - 1].second) + " and " + quoted(*by_offset[k].second) + " overlap");
  }
}

const GgufValue* Gguf::find(const std::string& key) const {
  const auto it = metadata_.find(key);
  return it == metadata_.end() ? nullptr : &it->second;
}

std::optional<uint64_t> Gguf::uint_value(const std::string& key) const {
  const GgufValue* v = find(key);
  if (!v) return std::nullopt;
  const auto u = v->as_unsigned();
  if (!u)
    throw Error(label_ + ": " + key + " is " + (v->is_integer() ? "negative" : std::string("a ") + gguf_value_type_name(v->type)) +
                ", not a count");
  return u;
}

std::optional<double> Gguf::float_value(const std::string& key) const {
  const GgufValue* v = find(key);
  if (!v) return std::nullopt;
  if (v->is_float()) return v->f;
  const bool is_signed = v->type == GgufValueType::I8 || v->type == GgufValueType::I16 ||
                         v->type == GgufValueType::I32 || v->type == GgufValueType::I64;
  if (v->is_integer()) return is_signed ? double(v->i) : double(v->u);
  throw Error(label_ + ": " + key + " is a " + gguf_value_type_name(v->type) + ", not a number");
}

std::optional<std::string> Gguf::string_value(const std::string& key) const {
  const GgufValue* v = find(key);
  if (!v) return std::nullopt;
  if (v->type != GgufValueType::String)
    throw Error(label_ + ": " + key + " is a " + gguf_value_type_name(v->type) + ", not a string");
  return std::string(v->s);
}

std::optional<bool> Gguf::bool_value(const std::string& key) const {
  const GgufValue* v = find(key);
  if (!v) return std::nullopt;
  if (v->type != GgufValueType::Bool || v->u > 1)
    throw Error(label_ + ": " + key + " is " + (v->type == GgufValueType::Bool ? std::string("a bool byte of ") + std::to_string(v->u) : std::string("a ") + gguf_value_type_name(v->type)) +
                ", not true or false");
  return v->u == 1;
}

const GgufValue* Gguf::array_value(const std::string& key, GgufValueType element) const {
  const GgufValue* v = find(key);
  if (!v) return nullptr;
  if (v->type != GgufValueType::Array || v->element != element)
    throw Error(label_ + ": " + key + " is " +
                (v->type == GgufValueType::Array ? std::string("an array of ") + gguf_value_type_name(v->element)
                                                 : std::string("a ") + gguf_value_type_name(v->type)) +
                ", not an array of " + gguf_value_type_name(element));
  return v;
}

const GgufTensor& Gguf::at(const std::string& name) const {
  const auto it = tensors_.find(name);
  if (it == tensors_.end()) throw Error(label_ + ": has no tensor " + quoted(name), ErrorKind::NotFound);
  return it->second;
}

}  // namespace vkf::model
