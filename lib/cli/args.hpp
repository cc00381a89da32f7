#pragma once
#include <optional>
#include <string>
#include <vector>

#include "vkformer/error.hpp"

namespace vkf::cli {

// The few flags the CLI takes: --name value, --name=value and bare --switch.
class Args {
 public:
  Args(int argc, char** argv, int first) {
    for (int i = first; i < argc; ++i) items_.emplace_back(argv[i]);
  }
  bool flag(const std::string& name) {
    for (size_t i = 0; i < items_.size(); ++i)
      if (items_[i] == name) {
        items_.erase(items_.begin() + long(i));
        return true;
      }
    return false;
  }
  std::optional<std::string> value(const std::string& name) {
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
  // Whatever is left must be positional; an unknown --option is an error.
  std::vector<std::string> rest() const {
    for (auto& s : items_)
      if (s.rfind("--", 0) == 0) throw Error("unknown option " + s);
    return items_;
  }

 private:
  std::vector<std::string> items_;
};

}  // namespace vkf::cli
