#include "run_cli.hpp"

#include <filesystem>

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

namespace vkf::test {

namespace {
std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}
}  // namespace

CliRun run_cli(const std::vector<std::string>& args, const CliOptions& o) {
  char dir_template[] = "/tmp/vkf-cli-XXXXXX";
  const std::string dir = ::mkdtemp(dir_template);
  const std::string out_path = o.stdout_path.empty() ? dir + "/out" : o.stdout_path, err_path = dir + "/err";
  std::vector<std::string> argv_s = {VKF_CLI_PATH};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);

  const auto start = std::chrono::steady_clock::now();
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int in = ::open(o.stdin_path.c_str(), O_RDONLY);
    const int out = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int err = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (in < 0 || out < 0 || err < 0) ::_exit(126);
    ::dup2(in, 0), ::dup2(out, 1), ::dup2(err, 2);
    if (o.close_stdout) ::close(1);
    if (o.max_file_bytes) {
      ::signal(SIGXFSZ, SIG_IGN);  // a write past the limit then fails with EFBIG, as on a full disk
      rlimit r{o.max_file_bytes, o.max_file_bytes};
      ::setrlimit(RLIMIT_FSIZE, &r);
    }
    if (o.max_data_bytes) {
      rlimit r{o.max_data_bytes, o.max_data_bytes};
      ::setrlimit(RLIMIT_DATA, &r);
    }
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  CliRun r;
  int wstatus = 0;
  for (;;) {
    if (::waitpid(pid, &wstatus, WNOHANG) == pid) break;
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (r.seconds > o.limit_seconds) {
      r.timed_out = true;
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &wstatus, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  r.status = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : 128 + WTERMSIG(wstatus);
  if (o.stdout_path.empty()) r.out = slurp(out_path);
  r.err = slurp(err_path);
  ::unlink(err_path.c_str());
  if (o.stdout_path.empty()) ::unlink(out_path.c_str());
  ::rmdir(dir.c_str());
  return r;
}

TempDir::TempDir() {
  char t[] = "/tmp/vkf-test-XXXXXX";
  path = ::mkdtemp(t);
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path, ec);
}

}  // namespace vkf::test
