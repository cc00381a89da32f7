#include "vkformer/files.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "vkformer/error.hpp"

namespace vkf {

std::string regular_file_problem(const std::string& path) {
  struct stat st{};
  if (::stat(path.c_str(), &st) != 0)
    return errno == ENOENT ? "does not exist" : std::string("cannot be read: ") + std::strerror(errno);
  if (S_ISDIR(st.st_mode)) return "is a directory, not a file";
  if (!S_ISREG(st.st_mode)) return "is a FIFO, socket or device, not a regular file";
  return "";
}

void require_regular_file(const std::string& path, const std::string& what) {
  const std::string problem = regular_file_problem(path);
  if (!problem.empty()) throw Error(what + " " + path + ": " + problem);
}

void write_file_atomically(const std::string& path, const std::vector<std::string_view>& parts) {
  const std::string tmp = path + ".tmp" + std::to_string(::getpid());
  auto fail = [&](const char* step, int err) {
    ::unlink(tmp.c_str());
    throw Error("cannot write " + path + " (" + step + "): " + std::strerror(err));
  };
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    const int err = errno;
    throw Error("cannot write " + path + ": " + std::strerror(err));
  }
  for (std::string_view part : parts) {
    while (!part.empty()) {
      const ssize_t n = ::write(fd, part.data(), part.size());
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        const int err = n < 0 ? errno : ENOSPC;
        ::close(fd);
        fail("write", err);
      }
      part.remove_prefix(size_t(n));
    }
  }
  if (::fsync(fd) != 0) {
    const int err = errno;
    ::close(fd);
    fail("flush", err);
  }
  if (::close(fd) != 0) fail("close", errno);
  if (std::rename(tmp.c_str(), path.c_str()) != 0) fail("rename", errno);
}

}  // namespace vkf
