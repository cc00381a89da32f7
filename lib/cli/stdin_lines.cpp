#include "stdin_lines.hpp"

#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "vkformer/error.hpp"

namespace vkf::cli {

bool StdinLines::readable_now() const {
  pollfd p{STDIN_FILENO, POLLIN, 0};
  return ::poll(&p, 1, 0) > 0;
}

void StdinLines::read_some() {
  char chunk[1 << 16];
  for (;;) {
    const ssize_t n = ::read(STDIN_FILENO, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw Error(std::string("cannot read standard input: ") + std::strerror(errno));
    if (n == 0) eof_ = true;
    buf_.append(chunk, size_t(n));
    return;
  }
}

bool StdinLines::next_batch(std::vector<std::string>& out, size_t max, std::vector<bool>& overlong) {
  out.clear();
  overlong.clear();
  auto emit = [&](std::string line, bool too_long) {
    out.push_back(std::move(line));
    overlong.push_back(too_long);
    ++lines_;
  };
  size_t start = 0;
  for (;;) {
    for (size_t nl; out.size() < max && (nl = buf_.find('\n', start)) != std::string::npos; start = nl + 1) {
      if (skipping_) {  // the end of a line too long to answer
        skipping_ = false;
        emit("", true);
        continue;
      }
      size_t end = nl;
      if (end > start && buf_[end - 1] == '\r') --end;
      if (end - start > kMaxLineBytes)  // whole already: it arrived in one read
        emit("", true);
      else
        emit(buf_.substr(start, end - start), false);
    }
    buf_.erase(0, start);
    start = 0;
    // A partial line past the limit (or the rest of one being skipped): dropped as it
    // comes, so memory stays bounded however long the line is.
    if ((skipping_ || buf_.size() > kMaxLineBytes) && buf_.find('\n') == std::string::npos) {
      buf_.clear();
      skipping_ = true;
    }
    if (out.size() == max) return true;
    if (eof_) {
      if (skipping_) {
        skipping_ = false;
        emit("", true);
      } else if (!buf_.empty()) {  // a last line without its newline
        emit(std::move(buf_), false);
        buf_.clear();
      }
      return !out.empty();
    }
    if (!out.empty() && !readable_now()) return true;  // answer what is here; wait for no more
    read_some();
  }
}

}  // namespace vkf::cli
