#include "instance.hpp"

#include <dlfcn.h>

#include <cstring>
#include <mutex>
#include <string>

namespace vkf::gpu {

#ifdef VKF_KEEP_VULKAN_LIBRARIES_LOADED
// Sanitizer builds only (the asan and tsan presets): the loader unloads the driver and
// the validation layer when the last instance goes, so LeakSanitizer, which runs at exit,
// could no longer name their frames ("<unknown module>") for its suppressions. Opening
// them once more with RTLD_NODELETE keeps them mapped until the process ends.
static void keep_vulkan_libraries_loaded() {
  for (const char* lib : {"libvulkan_lvp.so", "libVkLayer_khronos_validation.so", "libvulkan.so.1"})
    dlopen(lib, RTLD_LAZY | RTLD_NODELETE);
}
#endif

void load_vulkan() {
  static std::once_flag once;
  static VkResult result = VK_SUCCESS;
  std::call_once(once, [] {
#ifdef VKF_KEEP_VULKAN_LIBRARIES_LOADED
    keep_vulkan_libraries_loaded();
#endif
    result = volkInitialize();
  });
  if (result != VK_SUCCESS)
    throw Error(
        "the Vulkan loader (libvulkan.so.1) could not be loaded; install libvulkan1 and a "
        "Vulkan driver (for a CPU-only machine: mesa-vulkan-drivers, which provides lavapipe)");
}

// One instance, created with the first context's and never destroyed, so the loader
// never unloads the drivers and loads them again for the next context: on an H200
// (NVIDIA 580.159.04) every vkCreateInstance after such a reload that followed a
// context's (injected) device loss failed with VK_ERROR_INCOMPATIBLE_DRIVER, which broke
// the documented recovery, a new context. It has no layers and holds no device.
static void keep_drivers_loaded(const VkApplicationInfo& app, VkInstanceCreateFlags flags,
                                const std::vector<const char*>& extensions) {
  static std::once_flag once;
  std::call_once(once, [&] {
    std::vector<const char*> portability;  // only what enumerating every driver needs
    for (auto* e : extensions)
      if (std::strcmp(e, VK_KHR_PORTABILITY_ENUMERATION_EXTENSION_NAME) == 0) portability.push_back(e);
    VkInstanceCreateInfo info{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
    info.flags = flags;
    info.pApplicationInfo = &app;
    info.enabledExtensionCount = uint32_t(portability.size());
    info.ppEnabledExtensionNames = portability.data();
    static VkInstance keeper = VK_NULL_HANDLE;  // reachable to the end: not a leak
    if (vkCreateInstance(&info, nullptr, &keeper) != VK_SUCCESS) keeper = VK_NULL_HANDLE;  // best effort
  });
}

static bool has_layer(const char* name) {
  uint32_t n = 0;
  vkEnumerateInstanceLayerProperties(&n, nullptr);
  std::vector<VkLayerProperties> layers(n);
  vkEnumerateInstanceLayerProperties(&n, layers.data());
  for (auto& l : layers)
    if (std::strcmp(l.layerName, name) == 0) return true;
  return false;
}

static std::vector<VkExtensionProperties> instance_extensions(const char* layer) {
  uint32_t n = 0;
  vkEnumerateInstanceExtensionProperties(layer, &n, nullptr);
  std::vector<VkExtensionProperties> ext(n);
  vkEnumerateInstanceExtensionProperties(layer, &n, ext.data());
  return ext;
}

static bool has_extension(const std::vector<VkExtensionProperties>& ext, const char* name) {
  for (auto& e : ext)
    if (std::strcmp(e.extensionName, name) == 0) return true;
  return false;
}

Instance::Instance(bool validation, bool sync_validation, Log log) : log_(std::move(log)) {
  load_vulkan();
  uint32_t loader_version = VK_API_VERSION_1_0;
  if (vkEnumerateInstanceVersion) vkEnumerateInstanceVersion(&loader_version);
  if (loader_version < VK_API_VERSION_1_1)
    throw Error("the Vulkan loader supports only Vulkan 1.0; vkformer needs Vulkan 1.1 or newer");
  // 1.3 is the newest our headers describe; devices that offer more still run 1.3 code.
  api_version_ = loader_version < VK_API_VERSION_1_3 ? loader_version : VK_API_VERSION_1_3;

  const char* kValidation = "VK_LAYER_KHRONOS_validation";
  std::vector<const char*> layers, extensions;
  auto ext = instance_extensions(nullptr);
  VkInstanceCreateFlags flags = 0;
  if (has_extension(ext, VK_KHR_PORTABILITY_ENUMERATION_EXTENSION_NAME)) {
    // MoltenVK and other non-conformant layered drivers are listed only with this.
    extensions.push_back(VK_KHR_PORTABILITY_ENUMERATION_EXTENSION_NAME);
    flags |= VK_INSTANCE_CREATE_ENUMERATE_PORTABILITY_BIT_KHR;
  }
  bool want_sync = false;
  if (validation) {
    if (!has_layer(kValidation)) {
      log_.warn(
          "validation was requested but VK_LAYER_KHRONOS_validation is not installed "
          "(Debian: apt-get install vulkan-validationlayers); continuing without it");
    } else {
      layers.push_back(kValidation);
      validation_ = true;
      auto layer_ext = instance_extensions(kValidation);
      if (has_extension(ext, VK_EXT_DEBUG_UTILS_EXTENSION_NAME) ||
          has_extension(layer_ext, VK_EXT_DEBUG_UTILS_EXTENSION_NAME))
        extensions.push_back(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
      if (sync_validation && has_extension(layer_ext, VK_EXT_VALIDATION_FEATURES_EXTENSION_NAME)) {
        extensions.push_back(VK_EXT_VALIDATION_FEATURES_EXTENSION_NAME);
        want_sync = true;
      }
    }
  }

  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.pApplicationName = "vkformer";
  app.pEngineName = "vkformer";
  app.apiVersion = api_version_;

  VkDebugUtilsMessengerCreateInfoEXT messenger_info{VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
  messenger_info.messageSeverity =
      VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
  messenger_info.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                               VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                               VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
  messenger_info.pfnUserCallback = &Instance::on_message;
  messenger_info.pUserData = this;

  VkValidationFeatureEnableEXT enables[] = {VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT};
  VkValidationFeaturesEXT features{VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT};
  features.enabledValidationFeatureCount = 1;
  features.pEnabledValidationFeatures = enables;

  VkInstanceCreateInfo info{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  info.flags = flags;
  info.pApplicationInfo = &app;
  info.enabledLayerCount = uint32_t(layers.size());
  info.ppEnabledLayerNames = layers.data();
  info.enabledExtensionCount = uint32_t(extensions.size());
  info.ppEnabledExtensionNames = extensions.data();
  const void** tail = &info.pNext;
  bool debug_utils = false;
  for (auto* e : extensions) debug_utils |= std::strcmp(e, VK_EXT_DEBUG_UTILS_EXTENSION_NAME) == 0;
  if (debug_utils) {  // also catches messages from instance creation itself
    *tail = &messenger_info;
    tail = const_cast<const void**>(&messenger_info.pNext);
  }
  if (want_sync) *tail = &features;

  VkResult r = vkCreateInstance(&info, nullptr, &instance_);
  if (r == VK_ERROR_INCOMPATIBLE_DRIVER)
    throw Error("no Vulkan driver is installed (vkCreateInstance: VK_ERROR_INCOMPATIBLE_DRIVER); "
                "for a CPU-only machine install mesa-vulkan-drivers (lavapipe)");
  check(r, "vkCreateInstance");
  keep_drivers_loaded(app, flags, extensions);
  // Device functions go through the loader's trampolines (volkLoadDevice would bind
  // them to one device for the whole process, and two contexts may use two devices).
  volkLoadInstance(instance_);
  destroy_instance_ = reinterpret_cast<PFN_vkDestroyInstance>(vkGetInstanceProcAddr(instance_, "vkDestroyInstance"));

  if (debug_utils) {
    destroy_messenger_ = reinterpret_cast<PFN_vkDestroyDebugUtilsMessengerEXT>(
        vkGetInstanceProcAddr(instance_, "vkDestroyDebugUtilsMessengerEXT"));
    messenger_info.pNext = nullptr;
    check(vkCreateDebugUtilsMessengerEXT(instance_, &messenger_info, nullptr, &messenger_),
          "vkCreateDebugUtilsMessengerEXT");
  }
}

Instance::Instance(VkInstance borrowed, uint32_t api_version, PFN_vkGetInstanceProcAddr get_instance_proc_addr,
                   Log log)
    : log_(std::move(log)), instance_(borrowed), borrowed_(true) {
  if (!borrowed) throw Error("borrowed Vulkan objects: the instance is null");
  if (api_version < VK_API_VERSION_1_1)
    throw Error("borrowed Vulkan objects: the instance was created for Vulkan " +
                std::to_string(VK_API_VERSION_MAJOR(api_version)) + "." +
                std::to_string(VK_API_VERSION_MINOR(api_version)) +
                " (VkApplicationInfo::apiVersion); vkformer needs 1.1 or newer");
  if (get_instance_proc_addr) {
    static std::mutex mutex;  // volk's loader entry points are process-wide
    std::lock_guard lock(mutex);
    volkInitializeCustom(get_instance_proc_addr);
  } else {
    load_vulkan();
  }
  api_version_ = api_version < VK_API_VERSION_1_3 ? api_version : VK_API_VERSION_1_3;
  volkLoadInstance(instance_);
}

Instance::~Instance() {
  if (borrowed_) return;  // the application's to destroy
  if (messenger_ && destroy_messenger_) destroy_messenger_(instance_, messenger_, nullptr);
  if (instance_ && destroy_instance_) destroy_instance_(instance_, nullptr);
}

std::vector<VkPhysicalDevice> Instance::physical_devices() const {
  uint32_t n = 0;
  check(vkEnumeratePhysicalDevices(instance_, &n, nullptr), "vkEnumeratePhysicalDevices");
  std::vector<VkPhysicalDevice> devices(n);
  check(vkEnumeratePhysicalDevices(instance_, &n, devices.data()), "vkEnumeratePhysicalDevices");
  devices.resize(n);
  return devices;
}

VKAPI_ATTR VkBool32 VKAPI_CALL Instance::on_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                   VkDebugUtilsMessageTypeFlagsEXT,
                                                   const VkDebugUtilsMessengerCallbackDataEXT* data,
                                                   void* user) {
  auto* self = static_cast<Instance*>(user);
  self->messages_++;
  std::string msg = "validation: ";
  if (data->pMessageIdName) msg += std::string(data->pMessageIdName) + ": ";
  msg += data->pMessage ? data->pMessage : "";
  self->log_(severity >= VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT ? LogLevel::Error : LogLevel::Warning, msg);
  return VK_FALSE;
}

}  // namespace vkf::gpu
