#pragma once
// Runs the vkformer command as a user would, with a time limit, and returns its exit
// status and what it printed.
#include <string>
#include <vector>

namespace vkf::test {

struct CliRun {
  int status = -1;         // exit status; 128 + N when killed by signal N
  bool timed_out = false;  // still running after the limit (then killed)
  double seconds = 0;
  std::string out, err;
};

struct CliOptions {
  std::string stdin_path = "/dev/null";
  std::string stdout_path;         // empty: captured into CliRun::out
  unsigned long max_file_bytes = 0;  // > 0: RLIMIT_FSIZE, a disk that fills at this size
  unsigned long max_data_bytes = 0;  // > 0: RLIMIT_DATA, the heap (malloc's arenas and mappings) it may take
  double limit_seconds = 10;
  bool close_stdout = false;         // run as `vkformer ... >&-`
};

CliRun run_cli(const std::vector<std::string>& args, const CliOptions& options = {});

// A scratch directory, removed with everything in it when it goes out of scope.
struct TempDir {
  std::string path;
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string operator/(const std::string& name) const { return path + "/" + name; }
};

}  // namespace vkf::test
