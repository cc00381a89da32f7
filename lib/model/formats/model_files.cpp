#include "vkformer/model_files.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "gguf.hpp"
#include "gguf_hugging_face.hpp"
#include "vkformer/error.hpp"
#include "vkformer/gguf.hpp"
#include "files.hpp"

namespace vkf {

ModelFiles::ModelFiles(std::string directory) : directory_(std::move(directory)) {
  if (is_gguf_file(directory_)) gguf_ = std::make_shared<const model::Gguf>(directory_), gguf_name_ = directory_;
}

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
  if (!m.files_.count("config.json")) {
    std::vector<std::string> ggufs;
    for (const auto& [name, bytes] : m.files_)
      if (name.size() > 5 && name.ends_with(".gguf")) ggufs.push_back(name);
    if (ggufs.size() > 1)
      throw Error("model in memory: " + ggufs[0] + " and " + ggufs[1] + " are both GGUF files; give one",
                  ErrorKind::InvalidInput);
    if (ggufs.size() == 1) m.gguf_ = std::make_shared<const model::Gguf>(m, ggufs[0]), m.gguf_name_ = ggufs[0];
  }
  return m;
}

bool ModelFiles::has(const std::string& name) const {
  if (gguf_ && (name == "model.safetensors" || model::gguf_hugging_face_has(*gguf_, name))) return true;
  if (from_memory_) return files_.count(name) != 0;
  if (gguf_) return false;  // (a file, not a directory: nothing beside it is the model's)
  std::error_code ec;
  return std::filesystem::exists(std::filesystem::path(directory_) / name, ec);
}

std::string ModelFiles::where(const std::string& name) const {
  const std::string file = from_memory_ ? gguf_name_ + " (in memory)" : gguf_name_;
  if (gguf_ && (name == "config.json" || name.rfind("tokenizer", 0) == 0))
    return file + " (its metadata as " + name + ")";
  if (gguf_ && name == "model.safetensors") return file;
  if (from_memory_) return name + " (in memory)";
  return (std::filesystem::path(directory_) / name).string();
}

std::string ModelFiles::describe() const {
  if (gguf_) return "GGUF file '" + gguf_name_ + "'" + (from_memory_ ? " (in memory)" : "");
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
  if (gguf_)  // its metadata as config.json, its tokenizer's files
    if (auto text = model::gguf_hugging_face_file(*gguf_, name)) {
      if (text->size() > max_bytes) too_large(text->size());
      return std::move(*text);
    }
  if (gguf_ && !from_memory_) fail("is not among a GGUF model's files", ErrorKind::NotFound);
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

}  // namespace vkf
