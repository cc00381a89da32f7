#pragma once
#include "cli/args.hpp"

namespace vkf::cli {

int info(Args& args);
int selftest(Args& args);
int bench_ops(Args& args);

}  // namespace vkf::cli
