#include "env.hpp"

#include <cstdlib>
#include <string>

#include "vkformer/error.hpp"

namespace vkf {

std::optional<bool> env_switch(const char* name) {
  const char* env = std::getenv(name);
  if (!env) return std::nullopt;
  const std::string v = env;
  if (v != "0" && v != "1") throw Error(std::string(name) + " must be 0 or 1, not '" + v + "'");
  return v == "1";
}

}  // namespace vkf
