#pragma once
// Files in and out, safely: a FIFO, a device or a directory where a model or cache file
// should be must be an error, not a read that blocks forever; a written file must never
// be seen half-written, and a full disk must be an error, not a short file and exit 0.
#include <string>
#include <string_view>
#include <vector>

namespace vkf {

// "" when `path` is a regular file that can be opened; otherwise what is wrong with it
// ("does not exist", "is a directory", "is a FIFO, socket or device, not a regular file").
std::string regular_file_problem(const std::string& path);

// Throws vkf::Error("<what> <path>: <problem>") unless `path` is a regular file.
void require_regular_file(const std::string& path, const std::string& what);

// Writes the parts, in order, to a temporary file beside `path`, flushes it to the disk
// and renames it over `path`: readers see the old file or the whole new one. Any failure
// (no space, no permission, a missing directory) removes the temporary file and throws a
// vkf::Error that names `path` and the reason.
void write_file_atomically(const std::string& path, const std::vector<std::string_view>& parts);

}  // namespace vkf
