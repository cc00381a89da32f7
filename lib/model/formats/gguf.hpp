#pragma once
// A GGUF file, llama.cpp's one-file model format (hyperparameters, tokenizer and weights),
// versions 2 and 3, little-endian:
//   "GGUF", u32 version, u64 tensor count, u64 metadata count,
//   the metadata: (key: string, u32 value type, value) each, a string being a u64 byte
//     length and its bytes, an array a u32 element type, a u64 count and the elements,
//   the tensor infos: (name: string, u32 dimension count, u64 dimensions (the first is
//     the row: ggml's ne[0]), u32 ggml type, u64 offset) each,
//   padding to general.alignment (32 where the file does not say), then the data: each
//   tensor at its offset from there, a multiple of the alignment.
// Every count, length, offset and size is checked against the file before anything is
// allocated for it, so a small hostile file costs little memory and time; the errors
// name the file and what is wrong. Big-endian files and files split in parts are refused
// by name.
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mapped_file.hpp"
#include "vkformer/model_files.hpp"

namespace vkf::model {

// A metadata value's type, as the file numbers them.
enum class GgufValueType : uint32_t {
  U8 = 0, I8 = 1, U16 = 2, I16 = 3, U32 = 4, I32 = 5, F32 = 6, Bool = 7, String = 8, Array = 9,
  U64 = 10, I64 = 11, F64 = 12,
};
const char* gguf_value_type_name(GgufValueType t);

// A metadata value. Strings are views of the file's bytes (valid while the Gguf lives);
// an array of numbers or booleans keeps its elements where the file has them (`raw`,
// little-endian), read one by one with item(), so a large array costs no copy.
struct GgufValue {
  GgufValueType type = GgufValueType::U8;
  uint64_t u = 0;  // the unsigned types and Bool
  int64_t i = 0;   // the signed types
  double f = 0;    // F32, F64
  std::string_view s;  // String
  // Array:
  GgufValueType element = GgufValueType::U8;
  uint64_t count = 0;
  const uint8_t* raw = nullptr;          // numbers and booleans
  std::vector<std::string_view> strings;  // strings
  std::vector<GgufValue> arrays;          // arrays of arrays

  bool is_integer() const;  // one of the eight integer types
  bool is_float() const { return type == GgufValueType::F32 || type == GgufValueType::F64; }
  // An integer value as a uint64 (nullopt where negative).
  std::optional<uint64_t> as_unsigned() const;
  // Element k (< count) of an array of numbers or booleans, as a value of its own.
  GgufValue item(uint64_t k) const;
};

// ggml's tensor types (ggml.h's numbering): each a block of `values` values in `bytes`.
struct GgmlType {
  uint32_t id = 0;
  const char* name = "";
  uint32_t values = 1, bytes = 4;
};
// The type numbered `id`, or nullopt where ggml has none (ids it retired included).
std::optional<GgmlType> ggml_type(uint32_t id);

struct GgufTensor {
  std::vector<uint64_t> shape;  // ggml's order: shape[0] is a row's length
  GgmlType type;
  uint64_t offset = 0;  // from the start of the data
  uint64_t bytes = 0;
  const uint8_t* data = nullptr;
  uint64_t elements() const;
};

class Gguf {
 public:
  // The file `name` of a model given as files (a path on disk, or bytes in memory, read
  // where they are, never copied); or a file on disk by its path.
  Gguf(const ModelFiles& files, const std::string& name);
  explicit Gguf(const std::string& path);
  ~Gguf();
  Gguf(const Gguf&) = delete;
  Gguf& operator=(const Gguf&) = delete;

  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }
  uint64_t file_bytes() const { return size_; }
  // "model file PATH" (or "... (in memory)"), for messages.
  const std::string& label() const { return label_; }

  const std::map<std::string, GgufValue>& metadata() const { return metadata_; }
  const GgufValue* find(const std::string& key) const;
  // Typed reads: nullopt where the key is absent, a named error where its value has
  // another type (any integer type for uint: one that does not fit is an error).
  std::optional<uint64_t> uint_value(const std::string& key) const;
  std::optional<double> float_value(const std::string& key) const;  // F32, F64 or an integer
  std::optional<std::string> string_value(const std::string& key) const;
  std::optional<bool> bool_value(const std::string& key) const;
  // An array (nullptr where the key is absent), refused by name unless its elements have
  // type `element`.
  const GgufValue* array_value(const std::string& key, GgufValueType element) const;

  const std::map<std::string, GgufTensor>& tensors() const { return tensors_; }
  // Tensor infos in the file's order.
  const std::vector<std::string>& tensor_order() const { return order_; }
  const GgufTensor& at(const std::string& name) const;

  // Limits on what is read: generous for real models (a 150,000-token vocabulary,
  // thousands of tensors), bounded for hostile files.
  static constexpr uint64_t kMaxStringBytes = 1 << 20;  // a key, a value, a tensor name
  static constexpr uint32_t kMaxArrayDepth = 4;          // arrays of arrays
  static constexpr uint32_t kMaxDims = 4;                // GGML_MAX_DIMS
  static constexpr uint64_t kMaxNameBytes = 64;          // GGML_MAX_NAME - 1

 private:
  void map_and_parse(const std::string& path);
  void parse(const uint8_t* bytes, uint64_t size);

  std::unique_ptr<MappedFile> mapping_;  // a file on disk (none: the app's bytes)
  std::string label_;
  uint64_t size_ = 0;
  uint32_t version_ = 0;
  uint64_t alignment_ = 32;
  std::map<std::string, GgufValue> metadata_;
  std::map<std::string, GgufTensor> tensors_;
  std::vector<std::string> order_;
};

}  // namespace vkf::model
