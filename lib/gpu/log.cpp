#include "log.hpp"

#include <cstdio>
#include <cstdlib>
#include <string>

namespace vkf::gpu {

static LogLevel level_from_env() {
  const char* v = std::getenv("VKF_LOG");
  std::string s = v ? v : "";
  if (s == "debug") return LogLevel::Debug;
  if (s == "info") return LogLevel::Info;
  if (s == "error") return LogLevel::Error;
  return LogLevel::Warning;
}

Log::Log(LogSink sink) : sink_(std::move(sink)), threshold_(level_from_env()) {}

void Log::operator()(LogLevel level, std::string_view msg) const {
  if (sink_) return sink_(level, msg);
  if (level < threshold_) return;
  static const char* names[] = {"debug", "info", "warning", "error"};
  std::fprintf(stderr, "vkformer %s: %.*s\n", names[int(level)], int(msg.size()), msg.data());
}

}  // namespace vkf::gpu
