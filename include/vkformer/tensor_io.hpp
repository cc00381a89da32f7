#pragma once
// Host floats to and from device buffers in a storage type: fp16 is rounded to nearest
// even on the way up (vkformer/half.hpp), as every fp16 kernel input is.
#include <span>
#include <string_view>
#include <vector>

#include "vkformer/ops.hpp"

namespace vkf {

// A fresh buffer holding `values` as `type` (never empty: at least one element).
Buffer upload_floats(Context& ctx, std::span<const float> values, DType type, std::string_view name);
// The first `count` elements of a buffer of `type`, as floats.
std::vector<float> download_floats(Context& ctx, const Buffer& buffer, size_t count, DType type);

}  // namespace vkf
