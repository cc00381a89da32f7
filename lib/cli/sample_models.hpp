#pragma once
// The sample models (samples/dates, samples/forecast) wherever this vkformer runs from:
// installed under <prefix>/share/vkformer/samples, or in the source tree a build
// directory sits in. Found from the executable's own path, never the working directory.
#include <string>

namespace vkf::cli {

// The directory of sample `name`, or a vkf::Error naming where it looked.
std::string sample_model(const std::string& name);

}  // namespace vkf::cli
