// The vkformer command: one binary, one subcommand per job.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include "commands.hpp"
#include "args.hpp"
#include "vkformer/context.hpp"
#include "vkformer/error.hpp"
#include "vkformer/vkformer.h"

namespace {

// A result that never reached its reader (a closed pipe, a full disk) is a failure.
int finish_stdout(int status, const std::string& command) {
  if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
    std::fprintf(stderr, "vkformer %s: error: cannot write to standard output: %s\n", command.c_str(),
                 std::strerror(errno));
    return 1;
  }
  return status;
}

int run(const vkf::cli::CommandSpec& spec, int argc, char** argv) {
  const vkf::cli::Args args(spec, argc, argv, 2);  // the whole line checked against the command's table
  const std::string command = spec.name;
  // Long runs print a line per result: line by line into a pipe too, not at the end.
  if (command == "bench" || command == "tune") std::setvbuf(stdout, nullptr, _IOLBF, 0);
  if (command == "bench") return vkf::cli::bench(args);
  if (command == "info") return vkf::cli::info(args);
  if (command == "selftest") return vkf::cli::selftest(args);
  if (command == "generate") return vkf::cli::generate(args);
  if (command == "score") return vkf::cli::score(args);
  if (command == "encode") return vkf::cli::encode(args);
  if (command == "embed") return vkf::cli::embed(args);
  if (command == "search") return vkf::cli::search(args);
  if (command == "translate") return vkf::cli::translate(args);
  if (command == "tune") return vkf::cli::tune(args);
  if (command == "tokenize") return vkf::cli::tokenize(args);
  if (command == "help") return vkf::cli::help_command(args);
  if (command == "version") return vkf::cli::version_command(args);
  return vkf::cli::forecast(args);
}

// Standard streams a parent closed (`vkformer ... >&-`): the numbers 0-2 would go to the
// next files opened (a driver's memfd, a cache file), and answers with them. Closed ones
// get /dev/null; a closed standard output is an error, as a failed write is.
bool standard_output_open() {
  bool out_open = true;
  for (int fd = 0; fd <= 2; ++fd)
    if (::fcntl(fd, F_GETFD) == -1 && errno == EBADF) {
      if (fd == STDOUT_FILENO) out_open = false;
      const int null = ::open("/dev/null", fd == STDIN_FILENO ? O_RDONLY : O_WRONLY);
      if (null >= 0 && null != fd) {
        ::dup2(null, fd);
        ::close(null);
      }
    }
  return out_open;
}

}  // namespace

int main(int argc, char** argv) {
  if (!standard_output_open()) {
    std::fprintf(stderr, "vkformer: error: standard output is closed: there is nowhere to write the results\n");
    return 1;
  }
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h")) {
    std::fputs(vkf::cli::overview().c_str(), argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : finish_stdout(0, "--help");
  }
  if (!std::strcmp(argv[1], "--version")) {
    std::printf("vkformer %s (C ABI %d)\n", vkf::version(), VKF_ABI_VERSION);
    return finish_stdout(0, "--version");
  }
  const std::string command = argv[1];
  const vkf::cli::CommandSpec* spec = vkf::cli::find_command(command);
  if (!spec) {
    std::fprintf(stderr, "vkformer: unknown command '%s'\n\n%s", command.c_str(), vkf::cli::overview().c_str());
    return 2;
  }
  for (int i = 2; i < argc && std::strcmp(argv[i], "--"); ++i)
    if (!std::strcmp(argv[i], "--help") || !std::strcmp(argv[i], "-h")) {
      std::fputs(vkf::cli::command_help(*spec).c_str(), stdout);
      return finish_stdout(0, command);
    }
  try {
    return finish_stdout(run(*spec, argc, argv), command);
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "vkformer %s: error: %s\n", command.c_str(), e.what());
    return 1;
  }
}
