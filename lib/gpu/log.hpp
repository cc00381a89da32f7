#pragma once
#include <string_view>

#include "vkformer/context.hpp"

namespace vkf::gpu {

// Routes a message to the context's sink, or to stderr when the level passes VKF_LOG.
class Log {
 public:
  explicit Log(LogSink sink = {});
  void operator()(LogLevel level, std::string_view msg) const;
  void debug(std::string_view m) const { (*this)(LogLevel::Debug, m); }
  void info(std::string_view m) const { (*this)(LogLevel::Info, m); }
  void warn(std::string_view m) const { (*this)(LogLevel::Warning, m); }
  void error(std::string_view m) const { (*this)(LogLevel::Error, m); }

 private:
  LogSink sink_;
  LogLevel threshold_;
};

}  // namespace vkf::gpu
