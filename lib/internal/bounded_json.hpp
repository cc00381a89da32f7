#pragma once
// JSON from files vkformer did not write (a model's config and tokenizer files, a
// safetensors header, the tuning file, bench reports): parsed with its nesting bounded
// before any value is built, so a file of 300,000 nested arrays is a named error, not a
// stack overflow in a recursive copy, dump or destructor (nlohmann's parser itself keeps
// its own stack on the heap; what it builds is freed recursively). Real files nest 3 to 8
// levels deep. And values shown in messages, cut to a length a person reads.
//
// Header-only and not installed: every layer's target sees lib/internal/.
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "vkformer/error.hpp"

namespace vkf::json_limits {

// The deepest nesting vkformer reads: far past any real file, far short of a stack.
constexpr int kMaxDepth = 64;

struct TooDeep : std::runtime_error {
  TooDeep() : std::runtime_error("nested more than 64 levels deep") {}
};

// The document in `text`; throws nlohmann's parse_error for bad JSON and TooDeep (a
// std::exception) past `max_depth` levels, before building anything that deep.
inline nlohmann::json parse(std::string_view text, int max_depth = kMaxDepth) {
  const nlohmann::json::parser_callback_t bound = [max_depth](int depth, nlohmann::json::parse_event_t event,
                                                              nlohmann::json&) {
    if (depth >= max_depth && (event == nlohmann::json::parse_event_t::object_start ||
                               event == nlohmann::json::parse_event_t::array_start))
      throw TooDeep();
    return true;
  };
  return nlohmann::json::parse(text.begin(), text.end(), bound);
}

// A value for a message: its JSON text, at most `most` bytes ("..." after).
inline std::string shown(const nlohmann::json& v, size_t most = 80) {
  std::string text = v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (text.size() > most) text = text.substr(0, most) + "...";
  return text;
}

}  // namespace vkf::json_limits

namespace vkf::json_limits {

// A field of the wrong type: its name and what it holds, for the reader to prefix with its file.
struct WrongType : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// object[key] as T, or `fallback` when the object lacks it (or holds null); a value of
// another type throws WrongType naming the key ("field 'special' must be a boolean, got
// \"yes\""), never nlohmann's bare "type must be boolean, but is string".
template <class T>
T field(const nlohmann::json& object, const char* key, const T& fallback) {
  if (!object.is_object() || !object.contains(key) || object[key].is_null()) return fallback;
  const nlohmann::json& v = object[key];
  if constexpr (std::is_same_v<T, nlohmann::json>) {
    return v;
  } else {
    const bool ok = std::is_same_v<T, bool>          ? v.is_boolean()
                    : std::is_same_v<T, std::string> ? v.is_string()
                                                     : v.is_number();
    if (!ok)
      throw WrongType(std::string("field '") + key + "' must be " +
                      (std::is_same_v<T, bool> ? "true or false" : std::is_same_v<T, std::string> ? "a string" : "a number") +
                      ", got " + shown(v));
    return v.get<T>();
  }
}

}  // namespace vkf::json_limits
