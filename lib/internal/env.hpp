#pragma once
// Switches from the environment, read where they act.
#include <optional>

namespace vkf {

// A 0/1 switch (VKF_PIPELINE_STATS, VKF_EMULATE_COOPMAT, VKF_FOLD_NORMS): nothing when
// unset, false for "0", true for "1"; anything else is an Error naming the variable and
// the value, never a guess.
std::optional<bool> env_switch(const char* name);

}  // namespace vkf
