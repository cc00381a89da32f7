#include <cstdio>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "options.hpp"
#include "vkformer/self_test.hpp"

namespace vkf::cli {

int selftest(const Args& args) {
  const bool json = args.flag("--json");
  ContextOptions options = context_options(args);
  Context ctx(options);
  auto r = self_test(ctx);
  const bool ok = r.passed && ctx.validation_messages() == 0;
  if (json) {
    nlohmann::json j = {{"device", ctx.capabilities().name},       {"device_index", ctx.capabilities().index},
                        {"driver", ctx.capabilities().driver_info}, {"passed", ok},
                        {"detail", r.detail},                       {"microseconds", r.microseconds},
                        {"validation_messages", ctx.validation_messages()}};
    std::printf("%s\n", j.dump().c_str());
    return ok ? 0 : 1;
  }
  std::printf("self-test on [%u] %s (%s): %s (%s, %.0f us)\n", ctx.capabilities().index, ctx.capabilities().name.c_str(),
              ctx.capabilities().driver_info.c_str(), r.passed ? "PASS" : "FAIL", r.detail.c_str(), r.microseconds);
  if (ctx.validation_enabled() && ctx.validation_messages())
    std::printf("validation layer reported %llu message(s)\n", static_cast<unsigned long long>(ctx.validation_messages()));
  return ok ? 0 : 1;
}

}  // namespace vkf::cli
