#pragma once
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "vkformer/error.hpp"
#include "vkformer/files.hpp"

namespace vkf::model {

// A JSON object from a file; errors say "<what> <path>: ..." (unreadable, bad JSON, not an object).
inline nlohmann::json read_json_object(const std::string& path, const char* what) {
  auto fail = [&](const std::string& why) { throw Error(std::string(what) + " " + path + ": " + why); };
  if (std::string problem = regular_file_problem(path); !problem.empty()) fail(problem);
  std::ifstream f(path);
  if (!f) fail("cannot be read");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(f);
  } catch (const std::exception& e) {
    fail(std::string("is not valid JSON: ") + e.what());
  }
  if (!j.is_object()) fail("is not a JSON object");
  return j;
}

}  // namespace vkf::model
