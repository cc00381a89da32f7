#include <algorithm>
#include <cctype>
#include <string>

#include "instance.hpp"
#include "physical_device.hpp"
#include "vkformer/context.hpp"

namespace vkf {

const char* to_string(DeviceType t) {
  switch (t) {
    case DeviceType::DiscreteGpu: return "discrete GPU";
    case DeviceType::IntegratedGpu: return "integrated GPU";
    case DeviceType::VirtualGpu: return "virtual GPU";
    case DeviceType::Cpu: return "CPU";
    default: return "other";
  }
}

static int preference(DeviceType t) {
  switch (t) {
    case DeviceType::DiscreteGpu: return 4;
    case DeviceType::IntegratedGpu: return 3;
    case DeviceType::VirtualGpu: return 2;
    case DeviceType::Cpu: return 1;
    default: return 0;
  }
}

static std::string lower(std::string_view s) {
  std::string r(s);
  for (auto& ch : r) ch = char(std::tolower(static_cast<unsigned char>(ch)));
  return r;
}

static std::string listing(const std::vector<Capabilities>& devices) {
  std::string s;
  for (auto& d : devices)
    s += "\n  [" + std::to_string(d.index) + "] " + d.name + " (" + to_string(d.type) + ")";
  return s;
}

uint32_t choose_device(const std::vector<Capabilities>& devices, std::string_view choice) {
  if (devices.empty())
    throw Error("no Vulkan device found; install a driver (for a CPU-only machine: mesa-vulkan-drivers)");
  if (choice.empty()) {
    uint32_t best = 0;
    for (uint32_t i = 1; i < devices.size(); ++i)
      if (preference(devices[i].type) > preference(devices[best].type)) best = i;
    return best;
  }
  if (std::all_of(choice.begin(), choice.end(), [](char ch) { return std::isdigit(static_cast<unsigned char>(ch)); })) {
    unsigned long index = std::stoul(std::string(choice));
    if (index >= devices.size())
      throw Error("device index " + std::string(choice) + " is out of range; the Vulkan devices are:" +
                  listing(devices));
    return uint32_t(index);
  }
  const std::string want = lower(choice);
  for (uint32_t i = 0; i < devices.size(); ++i)
    if (lower(devices[i].name).find(want) != std::string::npos) return i;
  throw Error("no Vulkan device matches '" + std::string(choice) + "'; the Vulkan devices are:" + listing(devices));
}

std::vector<Capabilities> list_devices(const ContextOptions& options) {
  gpu::Instance instance(false, false, gpu::Log(options.log));
  std::vector<Capabilities> out;
  auto devices = instance.physical_devices();
  for (uint32_t i = 0; i < devices.size(); ++i)
    out.push_back(gpu::describe(devices[i], i, instance.api_version()).caps);
  return out;
}

const char* version() { return VKF_VERSION; }

}  // namespace vkf
