#include "args.hpp"

#include <cerrno>
#include <cmath>
#include <cstdlib>

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

bool Args::flag(const std::string& name) {
  for (size_t i = 0; i < items_.size(); ++i)
    if (items_[i] == name) {
      items_.erase(items_.begin() + long(i));
      return true;
    }
  return false;
}

std::optional<std::string> Args::value(const std::string& name) {
  for (size_t i = 0; i < items_.size(); ++i) {
    if (items_[i] == name) {
      if (i + 1 >= items_.size()) throw Error("option " + name + " needs a value");
      std::string v = items_[i + 1];
      items_.erase(items_.begin() + long(i), items_.begin() + long(i) + 2);
      return v;
    }
    if (items_[i].rfind(name + "=", 0) == 0) {
      std::string v = items_[i].substr(name.size() + 1);
      items_.erase(items_.begin() + long(i));
      return v;
    }
  }
  return std::nullopt;
}

uint32_t Args::count(const std::string& name, uint32_t fallback, uint32_t min, uint32_t max) {
  return uint32_t(count64(name, fallback, min, max));
}

uint64_t Args::count64(const std::string& name, uint64_t fallback, uint64_t min, uint64_t max) {
  auto v = value(name);
  return v ? parse_integer(*v, name, min, max) : fallback;
}

float Args::number(const std::string& name, float fallback, double min, double max) {
  auto v = value(name);
  return v ? float(parse_number(*v, name, min, max)) : fallback;
}

std::string Args::choice(const std::string& name, const std::string& fallback, const std::vector<std::string>& allowed) {
  auto v = value(name);
  if (!v) return fallback;
  std::string list;
  for (auto& a : allowed) {
    if (*v == a) return a;
    list += (list.empty() ? "" : ", ") + a;
  }
  throw Error(name + " must be one of " + list + ", got '" + *v + "'");
}

std::vector<std::string> Args::rest() const {
  for (auto& s : items_)
    if (s.rfind("--", 0) == 0) throw Error("unknown option " + s + " (see --help)");
  return items_;
}

}  // namespace vkf::cli
