#pragma once
#include <optional>
#include <string>
#include <vector>

#include "vkformer/error.hpp"

namespace vkf::cli {

// The whole of `text` as an integer in [min, max] (no sign, no spaces, no trailing
// characters: "1abc" is an error, not 1); the message names `what` and the range.
uint64_t parse_integer(const std::string& text, const std::string& what, uint64_t min, uint64_t max);
// The whole of `text` as a finite number in [min, max].
double parse_number(const std::string& text, const std::string& what, double min, double max);

// The flags a subcommand takes: --name value, --name=value and bare --switch. Numbers
// are parsed whole and checked against their range where they enter, so a wrapped or
// truncated value never reaches the library.
class Args {
 public:
  Args(int argc, char** argv, int first) {
    for (int i = first; i < argc; ++i) items_.emplace_back(argv[i]);
  }
  bool flag(const std::string& name);
  std::optional<std::string> value(const std::string& name);
  // An integer option in [min, max], or `fallback` when absent.
  uint32_t count(const std::string& name, uint32_t fallback, uint32_t min, uint32_t max);
  uint64_t count64(const std::string& name, uint64_t fallback, uint64_t min, uint64_t max);
  // A number option in [min, max], or `fallback` when absent.
  float number(const std::string& name, float fallback, double min, double max);
  // One of `allowed`, or `fallback` when absent.
  std::string choice(const std::string& name, const std::string& fallback, const std::vector<std::string>& allowed);
  // Whatever is left must be positional; an unknown --option is an error.
  std::vector<std::string> rest() const;

 private:
  std::vector<std::string> items_;
};

}  // namespace vkf::cli
