#pragma once
// A model file on disk mapped read-only for as long as the object lives: checkpoints are
// read where they lie, never copied whole. Errors say "<label>: ..." (a missing file:
// ErrorKind::NotFound; a FIFO, socket, device or directory; a mapping the system refuses).
// An empty file maps to no bytes, for the caller to refuse with its own words.
#include <cstdint>
#include <string>

namespace vkf::model {

class MappedFile {
 public:
  MappedFile(const std::string& path, const std::string& label);
  ~MappedFile();
  MappedFile(MappedFile&& o) noexcept : data_(o.data_), size_(o.size_) { o.data_ = nullptr, o.size_ = 0; }
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  MappedFile& operator=(MappedFile&&) = delete;

  const uint8_t* data() const { return static_cast<const uint8_t*>(data_); }
  uint64_t size() const { return size_; }

 private:
  void* data_ = nullptr;
  uint64_t size_ = 0;
};

}  // namespace vkf::model
