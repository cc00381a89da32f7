#pragma once
#include "args.hpp"

namespace vkf::cli {

int info(Args& args);
int selftest(Args& args);
int bench(Args& args, const std::string& what);
int generate(Args& args);
int score(Args& args);
int translate(Args& args);
int forecast(Args& args);

}  // namespace vkf::cli
