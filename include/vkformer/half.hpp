#pragma once
// IEEE half precision on the host, round to nearest even: what fp16 buffers hold.
#include <cstdint>

namespace vkf {

uint16_t float_to_half(float f);
float half_to_float(uint16_t h);

}  // namespace vkf
