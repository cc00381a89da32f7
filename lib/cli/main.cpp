// The vkformer command: one binary, one subcommand per job.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include "commands.hpp"
#include "help.hpp"
#include "vkformer/context.hpp"
#include "vkformer/error.hpp"

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

int run(const std::string& command, int argc, char** argv) {
  if (command == "bench") {
    // vkformer bench [ops|model|all|chart] [options]
    const bool named = argc > 2 && argv[2][0] != '-';
    vkf::cli::Args args(argc, argv, named ? 3 : 2);
    return vkf::cli::bench(args, named ? argv[2] : "all");
  }
  vkf::cli::Args args(argc, argv, 2);
  if (command == "info") return vkf::cli::info(args);
  if (command == "selftest") return vkf::cli::selftest(args);
  if (command == "generate") return vkf::cli::generate(args);
  if (command == "score") return vkf::cli::score(args);
  if (command == "translate") return vkf::cli::translate(args);
  return vkf::cli::forecast(args);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h")) {
    std::fputs(vkf::cli::overview().c_str(), argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : finish_stdout(0, "--help");
  }
  if (!std::strcmp(argv[1], "--version")) {
    std::printf("vkformer %s\n", vkf::version());
    return finish_stdout(0, "--version");
  }
  const std::string command = argv[1];
  const char* help = vkf::cli::command_help(command);
  if (!help) {
    std::fprintf(stderr, "vkformer: unknown command '%s'\n\n%s", command.c_str(), vkf::cli::overview().c_str());
    return 2;
  }
  for (int i = 2; i < argc; ++i)
    if (!std::strcmp(argv[i], "--help") || !std::strcmp(argv[i], "-h")) {
      std::fputs(help, stdout);
      return finish_stdout(0, command);
    }
  try {
    return finish_stdout(run(command, argc, argv), command);
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "vkformer %s: error: %s\n", command.c_str(), e.what());
    return 1;
  }
}
