#pragma once
#include <string>

#include "args.hpp"
#include "vkformer/context.hpp"

namespace vkf::cli {

int model_info(const std::string& dir, bool json, const ContextOptions& options);  // info --model
int info(Args& args);
int selftest(Args& args);
int bench(Args& args, const std::string& what);
int generate(Args& args);
int score(Args& args);
int translate(Args& args);
int forecast(Args& args);

}  // namespace vkf::cli
