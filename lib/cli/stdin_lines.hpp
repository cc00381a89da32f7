#pragma once
#include <string>
#include <vector>

namespace vkf::cli {

// Lines of standard input as they arrive: waits for the first line of a batch, then
// takes the complete lines already waiting (up to a batch), so a filter in a pipeline
// gets each answer at once while a file is still read in full batches.
class StdinLines {
 public:
  static constexpr size_t kMaxLineBytes = 1u << 20;
  // Fills `out` with 1..max lines (without "\n" or "\r\n"); false at the end of input.
  // A line longer than kMaxLineBytes is skipped to its end, never held: it comes as ""
  // with its `overlong` entry true (one entry per line), so the lines around it are still
  // answered. Throws vkf::Error on a read error.
  bool next_batch(std::vector<std::string>& out, size_t max, std::vector<bool>& overlong);

 private:
  bool readable_now() const;
  void read_some();  // one read(2); sets eof_ at the end of input

  std::string buf_;
  bool eof_ = false;
  bool skipping_ = false;  // inside a line past kMaxLineBytes: its bytes are dropped
  size_t lines_ = 0;
};

}  // namespace vkf::cli
