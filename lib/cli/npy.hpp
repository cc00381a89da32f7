#pragma once
// NumPy's .npy files of float32 matrices: written whole or not at all, and read back
// (the embedding caches) by a reader that trusts nothing in them.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace vkf::cli {

// data [rows, cols] as '<f4', C order; `trailer` bytes after the data (NumPy ignores
// them: vkformer's caches keep their key there).
void write_npy(const std::string& path, const std::vector<float>& data, size_t rows, size_t cols,
               std::string_view trailer = {});

struct NpyMatrix {
  size_t rows = 0, cols = 0;
  std::vector<float> values;  // [rows, cols]
  std::string trailer;        // the bytes after the data
};

// A .npy file of at most max_bytes holding a 2-D little-endian float32 C-order array
// (format 1.0, 2.0 or 3.0), and what follows the data. Anything else (another magic,
// dtype, order or rank, a header past the file, a shape whose data the file does not
// hold or whose size overflows, a FIFO or directory) throws vkf::Error naming the file
// and what is wrong, before any allocation larger than the file.
NpyMatrix read_npy(const std::string& path, uint64_t max_bytes);

}  // namespace vkf::cli
