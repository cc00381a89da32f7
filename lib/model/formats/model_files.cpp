#include "vkformer/model_files.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "vkformer/error.hpp"
#include "files.hpp"

namespace vkf {

ModelFiles::ModelFiles(std::string directory) : directory_(std::move(directory)) {}

ModelFiles ModelFiles::in_memory(const std::vector<File>& files) {
  ModelFiles m;
  m.from_memory_ = true;
  for (const File& f : files) {
    // A name is looked up as a directory's file would be: a path in it could never match,
    // and silently ignoring it would hide the app's mistake.
    if (f.name.empty() || f.name == "." || f.name == ".." || f.name.find('/') != std::string::npos ||
        f.name.find('\0') != std::string::npos)
      throw Error("model file name '" + f.name + "' is not a plain file name (such as config.json)",
                  ErrorKind::InvalidInput);
    if (f.bytes.data() == nullptr && !f.bytes.empty())
      throw Error("model file " + f.name + " (in memory): its bytes are NULL", ErrorKind::InvalidInput);
    if (!m.files_.emplace(f.name, f.bytes).second)
      throw Error("model file " + f.name + " (in memory) is given twice", ErrorKind::InvalidInput);
  }
  return m;
}

bool ModelFiles::has(const std::string& name) const {
  if (from_memory_) return files_.count(name) != 0;
  std::error_code ec;
  return std::filesystem::exists(std::filesystem::path(directory_) / name, ec);
}

std::string ModelFiles::where(const std::string& name) const {
  if (from_memory_) return name + " (in memory)";
  return (std::filesystem::path(directory_) / name).string();
}

std::string ModelFiles::describe() const {
  return from_memory_ ? std::string("model in memory") : "model directory '" + directory_ + "'";
}

std::string_view ModelFiles::memory_file(const std::string& name) const { return files_.at(name); }

std::string ModelFiles::read(const std::string& name, const std::string& what, uint64_t max_bytes) const {
  auto fail = [&](const std::string& why, ErrorKind kind = ErrorKind::Failed) {
    throw Error(what + " " + where(name) + ": " + why, kind);
  };
  auto too_large = [&](uint64_t size) {
    fail("is " + std::to_string(size) + " bytes, more than the " + std::to_string(max_bytes) +
         " such a file can be (refused before reading it)");
  };
  if (from_memory_) {
    const auto it = files_.find(name);
    if (it == files_.end()) fail("is not among the model's files", ErrorKind::NotFound);
    if (it->second.size() > max_bytes) too_large(it->second.size());
    return std::string(it->second);
  }
  const std::string path = where(name);
  if (const std::string problem = regular_file_problem(path); !problem.empty())
    fail(problem, problem == "does not exist" ? ErrorKind::NotFound : ErrorKind::Failed);
  // O_NONBLOCK: a FIFO swapped in since the check must not block the open.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) fail(std::string("cannot be read: ") + std::strerror(errno));
  struct stat st{};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    fail("is not a regular file");
  }
  if (uint64_t(st.st_size) > max_bytes) {
    ::close(fd);
    too_large(uint64_t(st.st_size));
  }
  std::string text(size_t(st.st_size), '\0');
  size_t got = 0;
  while (got < text.size()) {
    const ssize_t n = ::read(fd, text.data() + got, text.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // shorter than fstat said (truncated meanwhile): what was there
    got += size_t(n);
  }
  ::close(fd);
  text.resize(got);
  return text;
}

std::vector<std::string> ModelFiles::names() const {
  std::vector<std::string> out;
  for (const auto& [name, bytes] : files_) out.push_back(name);
  return out;
}

}  // namespace vkf
