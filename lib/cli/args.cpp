#include "args.hpp"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <algorithm>
#include <cctype>
#include <stdexcept>

namespace vkf::cli {

namespace {
std::string range_text(double min, double max) {
  auto num = [](double v) {
    char b[32];
    std::snprintf(b, sizeof b, "%g", v);
    return std::string(b);
  };
  return num(min) + " to " + num(max);
}
}  // namespace

uint64_t parse_integer(const std::string& text, const std::string& what, uint64_t min, uint64_t max) {
  bool digits = !text.empty() && text.size() <= 20;
  for (char ch : text) digits = digits && ch >= '0' && ch <= '9';
  errno = 0;
  const unsigned long long v = digits ? std::strtoull(text.c_str(), nullptr, 10) : 0;
  if (!digits || errno == ERANGE || v < min || v > max)
    throw Error(what + " must be an integer from " + std::to_string(min) + " to " + std::to_string(max) + ", got '" +
                text + "'");
  return v;
}

double parse_number(const std::string& text, const std::string& what, double min, double max) {
  char* end = nullptr;
  errno = 0;
  const double v = text.empty() || std::isspace(static_cast<unsigned char>(text[0])) ? NAN : std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || errno == ERANGE || !std::isfinite(v) || v < min || v > max)
    throw Error(what + " must be a number from " + range_text(min, max) + ", got '" + text + "'");
  return v;
}

namespace {

// Levenshtein distance, for naming the option a typo was meant to be.
size_t distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1])});
      diagonal = up;
    }
  }
  return row[b.size()];
}

const OptionSpec* lookup(const CommandSpec& command, const std::string& name) {
  for (const auto* list : {&command.options, &common_options()})
    for (const OptionSpec& o : *list)
      if (name == o.name) return &o;
  return nullptr;
}

[[noreturn]] void unknown(const CommandSpec& command, const std::string& given) {
  const std::string name = given.substr(0, given.find('='));
  std::string nearest;
  size_t best = 4;  // at most 3 edits away, or no suggestion
  for (const auto* list : {&command.options, &common_options()})
    for (const OptionSpec& o : *list)
      if (const size_t d = distance(name, o.name); d < best) best = d, nearest = o.name;
  std::string message = "unknown option " + name + " for `vkformer " + command.name + "`";
  if (!nearest.empty()) message += " (did you mean " + nearest + "?)";
  else message += " (see vkformer " + std::string(command.name) + " --help)";
  if (name.rfind("--", 0) != 0)
    message += "; options are spelled --name, and text that begins with '-' goes after --";
  throw Error(message);
}

bool looks_like_number(const std::string& s) {
  return s.size() > 1 && s[0] == '-' && (std::isdigit(static_cast<unsigned char>(s[1])) || s[1] == '.');
}

}  // namespace

Args::Args(const CommandSpec& command, int argc, char** argv, int first) : command_(command) {
  bool options_ended = false;
  for (int i = first; i < argc; ++i) {
    const std::string item = argv[i];
    if (options_ended || item.empty() || item[0] != '-' || item == "-" || looks_like_number(item)) {
      if (!command.positional)
        throw Error("`vkformer " + std::string(command.name) + "` takes no argument '" + item + "' (only options; see --help)");
      positional_.push_back(item);
      continue;
    }
    if (item == "--") {
      options_ended = true;
      continue;
    }
    const size_t eq = item.find('=');
    const std::string name = item.substr(0, eq);
    const OptionSpec* o = lookup(command, name);
    if (!o || item.rfind("--", 0) != 0) unknown(command, item);
    if (seen_.count(name)) throw Error("option " + name + " is given twice");
    if (o->kind == OptionKind::Switch) {
      if (eq != std::string::npos) throw Error("option " + name + " takes no value");
      seen_[name] = "";
    } else if (eq != std::string::npos) {
      seen_[name] = item.substr(eq + 1);
    } else {
      if (i + 1 >= argc) throw Error("option " + name + " needs a value (" + name + " " + o->value + ")");
      seen_[name] = argv[++i];
    }
  }
}

const OptionSpec& Args::spec(const std::string& name) const {
  const OptionSpec* o = lookup(command_, name);
  if (!o) throw std::logic_error("vkformer " + std::string(command_.name) + ": option " + name + " is not in its table");
  return *o;
}

bool Args::flag(const std::string& name) const {
  spec(name);
  return seen_.count(name) > 0;
}

std::optional<std::string> Args::value(const std::string& name) const {
  spec(name);
  const auto it = seen_.find(name);
  if (it == seen_.end()) return std::nullopt;
  return it->second;
}

uint64_t Args::count64(const std::string& name, uint64_t fallback) const {
  const OptionSpec& o = spec(name);
  const auto v = value(name);
  return v ? parse_integer(*v, name, uint64_t(o.min), o.max >= 1.8e19 ? UINT64_MAX : uint64_t(o.max)) : fallback;
}

float Args::number(const std::string& name, float fallback) const {
  const OptionSpec& o = spec(name);
  const auto v = value(name);
  return v ? float(parse_number(*v, name, o.min, o.max)) : fallback;
}

std::string Args::choice(const std::string& name, const std::string& fallback, const std::vector<std::string>& allowed) const {
  auto v = value(name);
  if (!v) return fallback;
  std::string list;
  for (auto& a : allowed) {
    if (*v == a) return a;
    list += (list.empty() ? "" : ", ") + a;
  }
  throw Error(name + " must be one of " + list + ", got '" + *v + "'");
}

}  // namespace vkf::cli
