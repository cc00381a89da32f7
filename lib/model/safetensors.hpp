#pragma once
// A memory-mapped safetensors file: a little-endian u64 header length, a JSON header
// {name: {dtype, shape, data_offsets}} (+ optional __metadata__), then raw data.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace vkf::model {

enum class TensorType { F32, F16, BF16 };

struct TensorInfo {
  TensorType type;
  std::vector<uint64_t> shape;
  const uint8_t* data = nullptr;
  uint64_t bytes = 0;
  uint64_t elements() const;
};

class SafeTensors {
 public:
  explicit SafeTensors(const std::string& path);  // throws vkf::Error naming what is wrong
  ~SafeTensors();
  SafeTensors(const SafeTensors&) = delete;
  SafeTensors& operator=(const SafeTensors&) = delete;

  const std::map<std::string, TensorInfo>& tensors() const { return tensors_; }
  const TensorInfo& at(const std::string& name) const;
  // The tensor as fp32 (F16 and BF16 widened exactly).
  std::vector<float> floats(const std::string& name) const;

 private:
  std::string path_;
  void* map_ = nullptr;
  uint64_t size_ = 0;
  std::map<std::string, TensorInfo> tensors_;
};

}  // namespace vkf::model
