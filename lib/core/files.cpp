#include "files.hpp"

#include <fcntl.h>
#include <sys/random.h>
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
  if (!problem.empty())
    throw Error(what + " " + path + ": " + problem, problem == "does not exist" ? ErrorKind::NotFound : ErrorKind::Failed);
}

namespace {

[[noreturn]] void cannot_write(const std::string& path, const std::string& why) {
  throw Error("cannot write " + path + ": " + why);
}

// Writes every part to fd; errno of the failure, or 0.
int write_all(int fd, const std::vector<std::string_view>& parts) {
  for (std::string_view part : parts) {
    while (!part.empty()) {
      const ssize_t n = ::write(fd, part.data(), part.size());
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return n < 0 ? errno : ENOSPC;
      part.remove_prefix(size_t(n));
    }
  }
  return 0;
}

// A character device (/dev/null, /dev/stdout's tty) or a FIFO someone reads: written
// where it is, never replaced. O_NOFOLLOW: the path was checked not to be a symlink, and a
// symlink swapped in since must not be followed either.
void write_in_place(const std::string& path, bool fifo, const std::vector<std::string_view>& parts) {
  // A FIFO's open blocks until a reader comes; O_NONBLOCK makes it fail (ENXIO) at once instead.
  const int fd = ::open(path.c_str(), O_WRONLY | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC | (fifo ? O_NONBLOCK : 0));
  if (fd < 0) {
    if (fifo && errno == ENXIO) cannot_write(path, "it is a FIFO that nothing reads");
    cannot_write(path, std::strerror(errno));
  }
  struct stat st{};
  if (::fstat(fd, &st) != 0 || !(fifo ? S_ISFIFO(st.st_mode) : S_ISCHR(st.st_mode))) {
    ::close(fd);
    cannot_write(path, "it changed while being opened");
  }
  if (fifo) ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);  // a reader is there: wait for it
  const int err = write_all(fd, parts);
  ::close(fd);
  if (err) cannot_write(path, std::strerror(err));
}

// "<dir>/.<name>.<32 random hex digits>.tmp": an attacker who owns the directory cannot
// guess it to plant a symlink or a FIFO there first, and O_EXCL refuses one anyway.
std::string temporary_name(const std::string& path) {
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "" : path.substr(0, slash + 1);
  const std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  unsigned char bytes[16];
  size_t got = 0;
  while (got < sizeof bytes) {
    const ssize_t n = ::getrandom(bytes + got, sizeof bytes - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) cannot_write(path, std::string("no random bytes for a temporary name: ") + std::strerror(errno));
    got += size_t(n);
  }
  char hex[33];
  for (size_t i = 0; i < sizeof bytes; ++i) std::snprintf(hex + 2 * i, 3, "%02x", bytes[i]);
  return dir + "." + name + "." + hex + ".tmp";
}

}  // namespace

void write_file_atomically(const std::string& path, const std::vector<std::string_view>& parts) {
  if (path.empty()) throw Error("cannot write a file with an empty name");
  struct stat st{};
  const bool exists = ::lstat(path.c_str(), &st) == 0;
  if (!exists && errno != ENOENT) cannot_write(path, std::strerror(errno));
  if (exists && S_ISLNK(st.st_mode)) {
    char target[4096];
    const ssize_t n = ::readlink(path.c_str(), target, sizeof target - 1);
    const std::string to = n > 0 ? std::string(target, size_t(n)) : "?";
    cannot_write(path, "it is a symbolic link (to " + to + "); vkformer does not follow or replace links: give the path of the file itself");
  }
  if (exists && S_ISCHR(st.st_mode)) return write_in_place(path, false, parts);
  if (exists && S_ISFIFO(st.st_mode)) return write_in_place(path, true, parts);
  if (exists && !S_ISREG(st.st_mode))
    cannot_write(path, S_ISDIR(st.st_mode) ? "it is a directory" : "it is a socket or block device, not a regular file");

  // A regular file or none: a fresh temporary file beside it, renamed into place, so
  // readers see the old file or the whole new one.
  std::string tmp;
  int fd = -1;
  for (int attempt = 0; fd < 0 && attempt < 16; ++attempt) {
    tmp = temporary_name(path);
    // O_EXCL|O_CREAT never follows a symlink and never opens what is already there.
    fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, exists ? 0600 : 0666);
    if (fd < 0 && errno != EEXIST) cannot_write(path, std::strerror(errno));
  }
  if (fd < 0) cannot_write(path, "no free temporary name beside it");
  auto fail = [&](const char* step, int err) {
    ::close(fd);
    ::unlink(tmp.c_str());  // ours: created exclusively above
    cannot_write(path, std::string(step) + ": " + std::strerror(err));
  };
  if (exists) {
    // The replacement keeps the file's owner (when root writes it) and its permissions;
    // set-id bits are not carried over to content they were never granted for.
    if (::geteuid() == 0 && (st.st_uid != 0 || st.st_gid != 0)) (void)!::fchown(fd, st.st_uid, st.st_gid);
    if (::fchmod(fd, st.st_mode & 0777) != 0) fail("keeping its mode", errno);
  }
  if (const int err = write_all(fd, parts)) fail("write", err);
  if (::fsync(fd) != 0) fail("flush", errno);
  if (::close(fd) != 0) {
    fd = -1;
    const int err = errno;
    ::unlink(tmp.c_str());
    cannot_write(path, std::string("close: ") + std::strerror(err));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    cannot_write(path, std::string("rename: ") + std::strerror(err));
  }
}

}  // namespace vkf
