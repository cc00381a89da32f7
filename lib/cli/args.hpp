#pragma once
// The command line, from one table per command (commands_table.cpp): the parser and
// --help both read it, so an option cannot be parsed without being documented, or
// documented with another range than it is checked against.
#include <map>
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

enum class OptionKind { Switch, Text, Integer, Number };

struct OptionSpec {
  const char* name;   // "--beam"
  const char* value;  // what follows it in help ("K"); nullptr for a switch
  OptionKind kind;
  const char* help;   // one line; "\n" starts a continuation line
  double min = 0, max = 0;  // Integer and Number: the one range, in every command
};

struct CommandSpec {
  const char* name;
  const char* summary;  // one line for the overview
  const char* usage;    // "usage: ..." lines
  const char* about;    // what it does, before the options
  std::vector<OptionSpec> options;
  const char* positional = nullptr;  // what bare arguments are ("TEXT"); nullptr: none are taken
};

// Every command, in the order the overview lists them; options every command takes.
const std::vector<CommandSpec>& commands();
const std::vector<OptionSpec>& common_options();
const CommandSpec* find_command(const std::string& name);
std::string command_help(const CommandSpec& command);  // --help of one command
std::string overview();                                // vkformer --help

// A command's arguments, parsed whole against its table when constructed: an unknown
// option (with the nearest known one named), a missing value, an option given twice,
// a value on a switch, or a bare argument where the command takes none is an error
// before anything runs. `--` ends the options: what follows is positional, even if it
// begins with '-'.
class Args {
 public:
  Args(const CommandSpec& command, int argc, char** argv, int first);

  bool flag(const std::string& name) const;
  std::optional<std::string> value(const std::string& name) const;
  bool given(const std::string& name) const { return seen_.count(name) > 0; }
  // An Integer or Number option checked against the table's range, or `fallback`.
  uint64_t count64(const std::string& name, uint64_t fallback) const;
  uint32_t count(const std::string& name, uint32_t fallback) const { return uint32_t(count64(name, fallback)); }
  float number(const std::string& name, float fallback) const;
  // One of `allowed`, or `fallback` when absent.
  std::string choice(const std::string& name, const std::string& fallback, const std::vector<std::string>& allowed) const;
  const std::vector<std::string>& rest() const { return positional_; }
  const CommandSpec& command() const { return command_; }

 private:
  const OptionSpec& spec(const std::string& name) const;  // a name the code asks for must be in the table
  const CommandSpec& command_;
  std::map<std::string, std::string> seen_;  // option -> value ("" for a switch)
  std::vector<std::string> positional_;
};

}  // namespace vkf::cli
