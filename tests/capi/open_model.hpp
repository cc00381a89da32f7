#pragma once
// What the C API tests share: a context, model and session opened on a model directory
// (validation on), and a check of the calling thread's last error.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "vkformer/vkformer.h"

namespace vkf::capi_test {

inline const std::string kDates = std::string(VKF_SOURCE_DIR) + "/samples/dates";

inline bool error_mentions(const char* part) { return std::strstr(vkf_last_error(), part) != nullptr; }

struct Handles {
  vkf_context* context = nullptr;
  vkf_model* model = nullptr;
  vkf_session* session = nullptr;
  ~Handles() {
    vkf_session_free(session);
    vkf_model_free(model);
    vkf_context_free(context);
  }
  void open(const std::string& dir = kDates) {
    vkf_context_options o = vkf_context_options_default();
    o.validation = 1;
    ASSERT_EQ(vkf_context_create(&o, &context), VKF_OK) << vkf_last_error();
    ASSERT_EQ(vkf_model_load(context, dir.c_str(), VKF_PRECISION_FP32, &model), VKF_OK) << vkf_last_error();
    ASSERT_EQ(vkf_session_create(model, &session), VKF_OK) << vkf_last_error();
  }
};

}  // namespace vkf::capi_test
