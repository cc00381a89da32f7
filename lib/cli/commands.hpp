#pragma once
#include <string>

#include "args.hpp"
#include "vkformer/context.hpp"
#include "vkformer/ops.hpp"

namespace vkf::cli {

int model_info(const std::string& dir, bool json, const ContextOptions& options, DType precision);  // info --model
int info(const Args& args);
int selftest(const Args& args);
int bench(const Args& args);
int generate(const Args& args);
int score(const Args& args);
int translate(const Args& args);
int forecast(const Args& args);
int tune(const Args& args);

}  // namespace vkf::cli
