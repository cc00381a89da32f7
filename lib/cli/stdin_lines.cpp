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

bool StdinLines::next_batch(std::vector<std::string>& out, size_t max) {
  out.clear();
  size_t start = 0;
  for (;;) {
    for (size_t nl; out.size() < max && (nl = buf_.find('\n', start)) != std::string::npos; start = nl + 1) {
      size_t end = nl;
      if (end > start && buf_[end - 1] == '\r') --end;
      out.emplace_back(buf_, start, end - start);
      ++lines_;
    }
    buf_.erase(0, start);
    start = 0;
    if (buf_.size() > kMaxLineBytes)
      throw Error("input line " + std::to_string(lines_ + 1) + " is longer than " + std::to_string(kMaxLineBytes >> 20) +
                  " MiB");
    if (out.size() == max) return true;
    if (eof_) {
      if (!buf_.empty()) {  // a last line without its newline
        out.push_back(std::move(buf_));
        buf_.clear();
        ++lines_;
      }
      return !out.empty();
    }
    if (!out.empty() && !readable_now()) return true;  // answer what is here; wait for no more
    read_some();
  }
}

}  // namespace vkf::cli
