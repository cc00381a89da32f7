#pragma once
#include "args.hpp"
#include "vkformer/context.hpp"

namespace vkf::cli {

// Context options every subcommand understands: --device, --validation, --no-cache.
inline ContextOptions context_options(Args& args) {
  ContextOptions o;
  if (auto d = args.value("--device")) o.device = *d;
  if (args.flag("--validation")) o.validation = true;
  if (args.flag("--no-cache")) o.disk_cache = false;
  return o;
}

}  // namespace vkf::cli
