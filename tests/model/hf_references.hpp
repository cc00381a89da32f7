#pragma once
// What the tests against transformers' references (tests/hf/<family>/references.json,
// made by tools/hf_references) share: the file read once, and the relative error of a
// model's logits, ||got - want|| / ||want|| over every position.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <vector>

namespace vkf::test {

inline nlohmann::json read_references(const std::filesystem::path& file) {
  std::ifstream f(file);
  return nlohmann::json::parse(f);
}

inline double relative_error(const std::vector<float>& got, const std::vector<double>& want) {
  EXPECT_EQ(got.size(), want.size());
  double num = 0, den = 0;
  for (size_t i = 0; i < std::min(got.size(), want.size()); ++i) {
    num += (got[i] - want[i]) * (got[i] - want[i]);
    den += want[i] * want[i];
  }
  return std::sqrt(num / den);
}

}  // namespace vkf::test
