#pragma once
#include <string>

namespace vkf::cli {

// What `vkformer --help` prints, and what `vkformer <command> --help` prints (nullptr
// for an unknown command).
std::string overview();
const char* command_help(const std::string& command);

}  // namespace vkf::cli
