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

// Writes the parts, in order, to `path`, and never to anything it did not name:
// - a regular file (or none): a temporary file created exclusively (O_EXCL|O_NOFOLLOW,
//   an unguessable name) beside it, flushed to the disk and renamed over it, keeping an
//   existing file's permissions; readers see the old file or the whole new one;
// - a character device (/dev/null): written in place, never replaced;
// - a FIFO: opened without blocking, refused when nothing reads it, else written;
// - a symbolic link: refused by name (the caller can give the file it names);
// - anything else (a directory, a socket, a block device): refused.
// Any failure (no space, no permission, a missing directory) removes the temporary file
// and throws a vkf::Error that names `path` and the reason.
void write_file_atomically(const std::string& path, const std::vector<std::string_view>& parts);

}  // namespace vkf
