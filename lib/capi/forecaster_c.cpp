// The C API's time-series forecaster (vkf_forecaster_*, vkf_forecast).
#include "handles.hpp"

using capi::guarded;
using capi::invalid;
using capi::too_small;

extern "C" {

vkf_status vkf_forecaster_load(vkf_context* context, const char* directory, vkf_precision precision,
                               vkf_forecaster** forecaster) {
  const char* fn = "vkf_forecaster_load";
  if (!forecaster) return invalid(fn, "forecaster is NULL");
  *forecaster = nullptr;
  if (!context) return invalid(fn, "context is NULL");
  if (!directory) return invalid(fn, "directory is NULL");
  const int precision_value = capi::enum_value(precision);
  if (precision_value != VKF_PRECISION_FP32 && precision_value != VKF_PRECISION_FP16)
    return invalid(fn, "precision must be VKF_PRECISION_FP32 or VKF_PRECISION_FP16");
  return guarded(fn, [&] {
    auto handle = std::make_unique<vkf_forecaster>();
    handle->ctx = context->ctx;
    handle->forecaster = vkf::Forecaster::load(*context->ctx, directory,
                                               precision_value == VKF_PRECISION_FP16 ? vkf::DType::F16 : vkf::DType::F32);
    *forecaster = handle.release();
    return VKF_OK;
  });
}

vkf_status vkf_forecaster_shape(const vkf_forecaster* forecaster, uint32_t* window, uint32_t* horizon) {
  if (!forecaster) return invalid("vkf_forecaster_shape", "forecaster is NULL");
  if (window) *window = forecaster->forecaster->config().window;
  if (horizon) *horizon = forecaster->forecaster->config().horizon;
  return VKF_OK;
}

vkf_status vkf_forecast(const vkf_forecaster* forecaster, const float* windows, size_t count, float* out,
                        size_t capacity) {
  const char* fn = "vkf_forecast";
  if (!forecaster) return invalid(fn, "forecaster is NULL");
  if (!windows || count == 0) return invalid(fn, "no windows (NULL or count 0)");
  const vkf::ForecasterConfig& c = forecaster->forecaster->config();
  // Checked before multiplying: a wrapped product would pass the capacity check.
  const auto needed_values = capi::product(count, c.horizon), window_values = capi::product(count, c.window);
  if (!needed_values || !window_values)
    return invalid(fn, "count " + std::to_string(count) + " windows is more than a size_t can count the values of");
  const size_t needed = *needed_values;
  if (!out || capacity < needed)
    return too_small(fn, "the forecasts take " + std::to_string(needed) + " floats (" + std::to_string(count) + " x " +
                             std::to_string(c.horizon) + ")",
                     capacity, out);
  return guarded(fn, [&] {
    const auto result = forecaster->forecaster->predict(std::vector<float>(windows, windows + *window_values));
    std::copy(result.begin(), result.end(), out);
    return VKF_OK;
  });
}

void vkf_forecaster_free(vkf_forecaster* forecaster) { delete forecaster; }

}  // extern "C"
