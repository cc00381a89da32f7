// write_npy and read_npy (npy.hpp).
#include "npy.hpp"

#include <cstring>
#include <filesystem>

#include "files.hpp"
#include "vkformer/error.hpp"
#include "vkformer/model_files.hpp"

namespace vkf::cli {

void write_npy(const std::string& path, const std::vector<float>& data, size_t rows, size_t cols,
               std::string_view trailer) {
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + std::to_string(rows) + ", " +
                       std::to_string(cols) + "), }";
  header.append(64 - (10 + header.size() + 1) % 64, ' ');
  header += '\n';
  const uint16_t len = uint16_t(header.size());
  std::string prefix("\x93NUMPY\x01\x00", 8);
  prefix.append(reinterpret_cast<const char*>(&len), 2);
  write_file_atomically(path, {prefix, header, {reinterpret_cast<const char*>(data.data()), data.size() * 4}, trailer});
}

namespace {

// The header's dict as NumPy writes it: the three keys in any order, Python literals.
struct Header {
  std::string descr;
  bool fortran = true;
  std::vector<uint64_t> shape;
};

Header parse_header(std::string_view h, const std::string& where) {
  auto fail = [&](const std::string& what) -> void { throw Error("npy " + where + ": " + what); };
  Header out;
  size_t at = 0;
  auto skip = [&] {
    while (at < h.size() && (h[at] == ' ' || h[at] == '\n')) ++at;
  };
  auto expect = [&](char c) {
    skip();
    if (at >= h.size() || h[at] != c) fail(std::string("header: expected '") + c + "' at byte " + std::to_string(at));
    ++at;
  };
  auto quoted = [&] {
    skip();
    if (at >= h.size() || (h[at] != '\'' && h[at] != '"')) fail("header: expected a quoted string at byte " + std::to_string(at));
    const char q = h[at++];
    const size_t end = h.find(q, at);
    if (end == std::string_view::npos || end - at > 64) fail("header: an unterminated or overlong string");
    std::string s(h.substr(at, end - at));
    at = end + 1;
    return s;
  };
  bool seen[3] = {false, false, false};
  expect('{');
  for (int key = 0; key < 4; ++key) {
    skip();
    if (at < h.size() && h[at] == '}') break;
    const std::string name = quoted();
    expect(':');
    skip();
    if (name == "descr" && !seen[0]) {
      out.descr = quoted(), seen[0] = true;
    } else if (name == "fortran_order" && !seen[1]) {
      if (h.substr(at, 5) == "False") out.fortran = false, at += 5;
      else if (h.substr(at, 4) == "True") out.fortran = true, at += 4;
      else fail("header: fortran_order must be True or False");
      seen[1] = true;
    } else if (name == "shape" && !seen[2]) {
      expect('(');
      for (;;) {
        skip();
        if (at < h.size() && h[at] == ')') break;
        uint64_t v = 0;
        size_t digits = 0;
        while (at < h.size() && h[at] >= '0' && h[at] <= '9' && digits < 19) v = v * 10 + uint64_t(h[at++] - '0'), ++digits;
        if (!digits || (at < h.size() && h[at] >= '0' && h[at] <= '9')) fail("header: a dimension of the shape is not a number below 10^19");
        if (out.shape.size() == 8) fail("header: more than 8 dimensions");
        out.shape.push_back(v);
        skip();
        if (at < h.size() && h[at] == ',') ++at;
      }
      ++at;
      seen[2] = true;
    } else {
      fail("header: key '" + name + "' is not descr, fortran_order or shape, or is given twice");
    }
    skip();
    if (at < h.size() && h[at] == ',') ++at;
  }
  expect('}');
  if (!seen[0] || !seen[1] || !seen[2]) fail("header: needs descr, fortran_order and shape");
  return out;
}

}  // namespace

NpyMatrix read_npy(const std::string& path, uint64_t max_bytes) {
  const std::filesystem::path p(path);
  const std::string where = path;
  auto fail = [&](const std::string& what) -> void { throw Error("npy " + where + ": " + what); };
  const std::string bytes = ModelFiles(p.parent_path().empty() ? "." : p.parent_path().string())
                                .read(p.filename().string(), "npy", max_bytes);
  if (bytes.size() < 10 || std::memcmp(bytes.data(), "\x93NUMPY", 6) != 0) fail("is not a .npy file (no \\x93NUMPY magic)");
  const uint8_t major = uint8_t(bytes[6]);
  if (major < 1 || major > 3) fail("format version " + std::to_string(major) + " is not 1, 2 or 3");
  size_t header_len = 0, start = 0;
  if (major == 1) {
    header_len = uint8_t(bytes[8]) | (size_t(uint8_t(bytes[9])) << 8), start = 10;
  } else {
    if (bytes.size() < 12) fail("is cut short in its header");
    header_len = 0;
    for (int i = 3; i >= 0; --i) header_len = (header_len << 8) | uint8_t(bytes[8 + i]);
    start = 12;
  }
  if (header_len > bytes.size() - start) fail("its header (" + std::to_string(header_len) + " bytes) runs past the file");
  const Header h = parse_header(std::string_view(bytes).substr(start, header_len), where);
  if (h.descr != "<f4") fail("dtype '" + h.descr + "' is not '<f4' (little-endian float32)");
  if (h.fortran) fail("is in Fortran order; vkformer reads C order");
  if (h.shape.size() != 2) fail("has " + std::to_string(h.shape.size()) + " dimensions; vkformer reads 2-D matrices");
  const size_t data_at = start + header_len, held = bytes.size() - data_at;
  const uint64_t rows = h.shape[0], cols = h.shape[1];
  if (cols && rows > held / 4 / cols) fail("shape (" + std::to_string(rows) + ", " + std::to_string(cols) +
                                           ") needs more data than the file's " + std::to_string(held) + " bytes");
  NpyMatrix m;
  m.rows = rows, m.cols = cols;
  m.values.resize(rows * cols);
  std::memcpy(m.values.data(), bytes.data() + data_at, rows * cols * 4);
  m.trailer = bytes.substr(data_at + rows * cols * 4);
  return m;
}

}  // namespace vkf::cli
