#include "log.hpp"

#include <cstdio>
#include <cstdlib>
#include <string>

#include "vkformer/error.hpp"

namespace vkf::gpu {

static LogLevel level_from_env() {
  const char* v = std::getenv("VKF_LOG");
  std::string s = v ? v : "";
  if (s == "debug") return LogLevel::Debug;
  if (s == "info") return LogLevel::Info;
  if (s == "error") return LogLevel::Error;
  if (s.empty() || s == "warning") return LogLevel::Warning;
  // Checked like an option: a misspelt level is an error, not the default in silence.
  throw Error("VKF_LOG must be debug, info, warning or error, not '" + s + "'");
}

namespace {
const char* level_name(LogLevel level) {
  switch (level) {
    case LogLevel::Debug: return "debug";
    case LogLevel::Info: return "info";
    case LogLevel::Warning: return "warning";
    case LogLevel::Error: return "error";
  }
  return "?";
}
}  // namespace

Log::Log(LogSink sink) : sink_(std::move(sink)), threshold_(level_from_env()) {}

void Log::operator()(LogLevel level, std::string_view msg) const {
  if (sink_) return sink_(level, msg);
  if (level < threshold_) return;
  std::fprintf(stderr, "vkformer %s: %.*s\n", level_name(level), int(msg.size()), msg.data());
}

}  // namespace vkf::gpu
