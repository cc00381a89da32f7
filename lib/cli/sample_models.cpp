#include "sample_models.hpp"

#include <filesystem>
#include <system_error>
#include <vector>

#include "vkformer/error.hpp"

namespace vkf::cli {

std::string sample_model(const std::string& name) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  std::vector<fs::path> candidates;
  if (!ec) {
    const fs::path bin = exe.parent_path();
    candidates.push_back(bin / ".." / "share" / "vkformer" / "samples" / name);  // installed: <prefix>/bin/vkformer
    candidates.push_back(bin / ".." / "samples" / name);                         // a build directory in the source tree
  }
#ifdef VKF_SOURCE_SAMPLES
  candidates.push_back(fs::path(VKF_SOURCE_SAMPLES) / name);  // a build directory elsewhere
#endif
  std::string looked;
  for (const auto& c : candidates) {
    if (fs::is_regular_file(c / "config.json", ec)) return fs::weakly_canonical(c, ec).string();
    looked += (looked.empty() ? "" : ", ") + c.lexically_normal().string();
  }
  throw Error("the sample model '" + name + "' is not beside this vkformer (looked in " + looked +
              "): pass --model DIR");
}

}  // namespace vkf::cli
