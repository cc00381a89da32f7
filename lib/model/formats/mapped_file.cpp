#include "mapped_file.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "vkformer/error.hpp"

namespace vkf::model {

MappedFile::MappedFile(const std::string& path, const std::string& label) {
  // O_NONBLOCK: a FIFO in the file's place must not block the open; it is refused below.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    throw Error(label + ": cannot open: " + std::strerror(err), err == ENOENT ? ErrorKind::NotFound : ErrorKind::Failed);
  }
  struct stat st{};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw Error(label + ": is not a regular file (a FIFO, socket, device or directory)");
  }
  const uint64_t size = uint64_t(st.st_size);
  if (size == 0) {
    ::close(fd);
    return;
  }
  void* map = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (map == MAP_FAILED) throw Error(label + ": cannot map it into memory");
  data_ = map, size_ = size;
}

MappedFile::~MappedFile() {
  if (data_) ::munmap(data_, size_);
}

}  // namespace vkf::model
