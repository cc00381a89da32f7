#include "safetensors.hpp"

#include "gguf.hpp"
#include "gguf_hugging_face.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <optional>
#include <set>
#include <cstring>
#include <tuple>
#include <nlohmann/json.hpp>

#include "json_file.hpp"
#include "vkformer/error.hpp"
#include "vkformer/half.hpp"

namespace vkf::model {

uint64_t TensorInfo::elements() const {
  uint64_t n = 1;
  for (auto d : shape) n *= d;  // add_file checked that the product fits
  return n;
}

namespace {

// The largest header read. An entry takes ~100-150 bytes, so 16 MiB lists over 100,000
// tensors, far more than one file of any published checkpoint holds (save_pretrained
// shards at 5 GB, and a Llama-70B shard lists a few hundred tensors); safetensors' own
// reader allows 100 MB. Parsed, a header takes ~15 times its text: ~250 MiB at most,
// against the 1.9 GB a 135 MB header of empty tensors once took before its error.
constexpr uint64_t kMaxHeaderBytes = 16ull << 20;

// The product of a shape and an element size, or nullopt when it does not fit 64 bits
// (a shape like [2^32, 2^32] would wrap to 0 bytes and pass as an empty tensor).
std::optional<uint64_t> shape_bytes(const std::vector<uint64_t>& shape, uint64_t elem) {
  uint64_t n = elem;
  for (uint64_t d : shape)
    if (__builtin_mul_overflow(n, d, &n)) return std::nullopt;
  return n;
}

}  // namespace

std::vector<std::string> SafeTensors::add_file(const ModelFiles& files, const std::string& name_in_model) {
  const std::string path = files.where(name_in_model);
  auto fail = [&](const std::string& why) { throw Error("model file " + path + ": " + why); };
  const uint8_t* bytes = nullptr;
  uint64_t size = 0;
  if (files.from_memory()) {  // the app's bytes, read where they are
    if (!files.has(name_in_model)) throw Error("model file " + path + ": is not among the model's files", ErrorKind::NotFound);
    const std::string_view b = files.memory_file(name_in_model);
    bytes = reinterpret_cast<const uint8_t*>(b.data());
    size = b.size();
    if (size < 8) fail("truncated: " + std::to_string(size) + " bytes, shorter than the 8-byte header length");
  } else {
    const MappedFile& map = maps_.emplace_back(path, "model file " + path);
    bytes = map.data();
    size = map.size();
    if (size < 8) fail("truncated: " + std::to_string(size) + " bytes, shorter than the 8-byte header length");
  }
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | bytes[i];  // little-endian
  if (header_len > size - 8) fail("truncated: the header claims " + std::to_string(header_len) + " bytes");
  if (header_len > kMaxHeaderBytes)
    fail("the header is " + std::to_string(header_len) + " bytes, more than the " + std::to_string(kMaxHeaderBytes) +
         " vkformer reads (about 100,000 tensors' worth)");
  nlohmann::json header;
  try {
    header = json_limits::parse(std::string_view(reinterpret_cast<const char*>(bytes) + 8, header_len));
  } catch (const json_limits::TooDeep& e) {
    fail(std::string("the header is ") + e.what());
  } catch (const std::exception& e) {
    fail(std::string("the header is not valid JSON: ") + e.what());
  }
  if (!header.is_object()) fail("the header is not a JSON object");
  const uint8_t* data = bytes + 8 + header_len;
  const uint64_t data_size = size - 8 - header_len;
  std::vector<std::tuple<uint64_t, uint64_t, std::string>> ranges;  // [begin, end), name
  std::vector<std::string> names;
  for (auto& item : header.items()) {  // (not a structured binding: lambdas below capture the name)
    const std::string& name = item.key();
    auto& info = item.value();
    if (name == "__metadata__") continue;
    auto bad = [&](const std::string& why) { fail("tensor '" + name + "': " + why); };
    if (!info.is_object() || !info.contains("dtype") || !info.contains("shape") || !info.contains("data_offsets"))
      bad("needs dtype, shape and data_offsets");
    TensorInfo t;
    const std::string dtype = info["dtype"].is_string() ? info["dtype"].get<std::string>() : "";
    uint32_t elem = 0;
    if (dtype == "F32") t.type = TensorType::F32, elem = 4;
    else if (dtype == "F16") t.type = TensorType::F16, elem = 2;
    else if (dtype == "BF16") t.type = TensorType::BF16, elem = 2;
    else if (dtype == "I64") t.type = TensorType::Integers, elem = 8;
    else if (dtype == "I32") t.type = TensorType::Integers, elem = 4;
    else if (dtype == "I16") t.type = TensorType::Integers, elem = 2;
    else if (dtype == "I8" || dtype == "U8" || dtype == "BOOL") t.type = TensorType::Integers, elem = 1;
    else bad("dtype '" + dtype + "' is not supported (F32, F16, BF16; integers for buffers left unread)");
    if (!info["shape"].is_array()) bad("shape is not a list");
    for (auto& d : info["shape"]) {
      if (!d.is_number_unsigned()) bad("shape has a non-integer entry");
      t.shape.push_back(d.get<uint64_t>());
    }
    auto& off = info["data_offsets"];
    if (!off.is_array() || off.size() != 2 || !off[0].is_number_unsigned() || !off[1].is_number_unsigned())
      bad("data_offsets must be [begin, end]");
    const uint64_t begin = off[0], end = off[1];
    if (begin > end || end > data_size)
      bad("data [" + std::to_string(begin) + ", " + std::to_string(end) + ") lies outside the file's " +
          std::to_string(data_size) + " data bytes (truncated file?)");
    t.bytes = end - begin;
    const auto needed = shape_bytes(t.shape, elem);
    if (!needed) bad("its shape has more bytes than 2^64 (a hostile or corrupt header)");
    if (t.bytes != *needed)
      bad("holds " + std::to_string(t.bytes) + " bytes, but its shape needs " + std::to_string(*needed));
    t.data = data + begin;
    if (tensors_.count(name)) bad("is also in another shard of the checkpoint");
    tensors_[name] = t;
    names.push_back(name);
    if (end > begin) ranges.push_back({begin, end, name});  // an empty tensor owns no bytes
  }
  // Two tensors sharing bytes would silently alias each other's weights.
  std::sort(ranges.begin(), ranges.end());
  for (size_t i = 1; i < ranges.size(); ++i)
    if (std::get<0>(ranges[i]) < std::get<1>(ranges[i - 1]))
      fail("tensors '" + std::get<2>(ranges[i - 1]) + "' and '" + std::get<2>(ranges[i]) + "' overlap in the file (bytes " +
           std::to_string(std::get<0>(ranges[i])) + " to " + std::to_string(std::get<1>(ranges[i - 1])) + ")");
  return names;
}

SafeTensors::SafeTensors(const ModelFiles& files, const std::string& name) : path_(files.where(name)) {
  if (files.gguf()) {
    gguf_ = files.gguf_file();
    GgufHfTensors t = gguf_hugging_face_tensors(*gguf_);
    owned_ = std::move(t.owned);
    for (auto& [hf, g] : t.tensors) {
      TensorInfo info;
      info.type = g.blocks ? TensorType::Blocks : g.ggml_type == "F32" ? TensorType::F32
                                             : g.ggml_type == "F16" ? TensorType::F16 : TensorType::BF16;
      info.blocks = g.blocks;
      info.shape = g.shape;
      info.data = g.data, info.bytes = g.bytes;
      info.rows_are_outputs = g.rows_are_outputs;
      tensors_.emplace(hf, std::move(info));
    }
    return;
  }
  const std::string suffix = ".index.json";
  if (name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0)
    add_shards(files, name);
  else
    add_file(files, name);
}

SafeTensors::SafeTensors(const std::string& path)
    : SafeTensors(ModelFiles(std::filesystem::path(path).parent_path().string()),
                  std::filesystem::path(path).filename().string()) {}

// model.safetensors.index.json as save_pretrained writes it: {"metadata": {...},
// "weight_map": {tensor: shard file name}}. Every shard it names is mapped, and each
// tensor must be in the shard the map gives, so a stale or mixed-up index is an error.
void SafeTensors::add_shards(const ModelFiles& files, const std::string& index_name) {
  const std::string index_path = files.where(index_name);
  const nlohmann::json index = read_json_object(files, index_name, "model index");
  auto fail = [&](const std::string& why) { throw Error("model index " + index_path + ": " + why); };
  const auto map = index.find("weight_map");
  if (map == index.end() || !map->is_object() || map->empty())
    fail("needs a 'weight_map' object naming each tensor's file");
  std::map<std::string, std::set<std::string>> shards;  // file -> its tensors
  for (const auto& [tensor, file] : map->items()) {
    if (!file.is_string()) fail("the file of tensor '" + tensor + "' is not a string");
    const std::string name = file.get<std::string>();
    // A shard lies beside the index: a path elsewhere is refused, not followed.
    if (name.empty() || name.find('/') != std::string::npos || name == "." || name == "..")
      fail("tensor '" + tensor + "' names the file '" + name + "', which is not a file name in the checkpoint's directory");
    shards[name].insert(tensor);
  }
  for (const auto& [name, listed] : shards) {
    const std::string shard = files.where(name);
    for (const std::string& tensor : add_file(files, name))
      if (!listed.count(tensor))
        throw Error("model file " + shard + ": holds tensor '" + tensor + "', which " + index_path +
                    (map->contains(tensor) ? " puts in " + (*map)[tensor].get<std::string>() : " does not list"));
  }
  for (const auto& [name, listed] : shards)
    for (const std::string& tensor : listed)
      if (!tensors_.count(tensor))
        throw Error("model file " + files.where(name) + ": missing tensor '" + tensor + "', which " + index_path +
                    " puts there");
}

SafeTensors::~SafeTensors() = default;

const TensorInfo& SafeTensors::at(const std::string& name) const {
  auto it = tensors_.find(name);
  if (it == tensors_.end()) throw Error("model file " + path_ + ": missing tensor '" + name + "'");
  return it->second;
}

std::optional<SafeTensors::Blocks> SafeTensors::blocks(const std::string& name) const {
  const TensorInfo& t = at(name);
  if (!t.blocks) return std::nullopt;
  return Blocks{*t.blocks, std::span<const uint8_t>(t.data, t.bytes)};
}

std::vector<float> SafeTensors::floats(const std::string& name) const {
  const TensorInfo& t = at(name);
  if (t.blocks) return dequantize_blocks(*t.blocks, std::span<const uint8_t>(t.data, t.bytes));
  if (t.type == TensorType::Integers)
    throw Error("model file " + path_ + ": tensor '" + name + "' holds integers, which no weight is");
  std::vector<float> out(t.elements());
  for (uint64_t i = 0; i < out.size(); ++i) {
    if (t.type == TensorType::F32) {
      std::memcpy(&out[i], t.data + 4 * i, 4);
    } else {
      uint16_t h;
      std::memcpy(&h, t.data + 2 * i, 2);
      if (t.type == TensorType::F16) {
        out[i] = half_to_float(h);
      } else {
        uint32_t x = uint32_t(h) << 16;
        std::memcpy(&out[i], &x, 4);
      }
    }
  }
  return out;
}

}  // namespace vkf::model
