// `vkformer info`: every device, its capabilities, the default marked, and which
// optional features vkformer turns on there.
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "vkformer/gguf.hpp"
#include "options.hpp"
#include "vkformer/context.hpp"
#include "vkformer/model.hpp"

namespace vkf::cli {

namespace {

std::string uuid_hex(const std::array<uint8_t, 16>& u) {
  std::string s;
  char b[3];
  for (auto x : u) {
    std::snprintf(b, sizeof b, "%02x", x);
    s += b;
  }
  return s;
}

// The decode-step GEMM's fp32 loads through addresses (64-bit words): the default where
// the CPU driver's host gathers in hardware, and what buffer addresses and 64-bit
// integers are used for.
bool decode_gemm_reads_addresses(const Capabilities& c) {
  return c.buffer_device_address && c.shader_int64 && c.hardware_gathers;
}

std::vector<std::string> features_used(const Capabilities& c) {
  std::vector<std::string> f;
  if (c.storage_16bit) f.push_back("fp16 storage");
  if (c.rounding_rte_fp16) f.push_back("fp16 round-to-nearest-even");
  if (c.subgroup_arithmetic) f.push_back("subgroup arithmetic");
  if (c.subgroup_shuffle) f.push_back("subgroup shuffle");
  if (c.subgroup_ballot) f.push_back("subgroup ballot");
  if (c.subgroup_size_control) f.push_back("subgroup size control");
  if (c.compute_only_queue) f.push_back("compute-only queue");
  if (c.unified_memory) f.push_back("direct host access (unified memory)");
  if (c.portability_subset) f.push_back("portability subset");
  if (c.memory_budget) f.push_back("heap budgets (memory budget)");
  if (decode_gemm_reads_addresses(c))
    f.push_back("buffer device addresses and 64-bit integers (the decode-step GEMM's fp32 loads: this CPU gathers in hardware)");
  // The cooperative-matrix GEMM (fp16 inputs): where a tuning file or the tuned-card table names it.
  if (c.cooperative_matrix_nv) f.push_back("NV cooperative matrix and fp16 arithmetic (the coopmat_nv GEMM, where tuned)");
  return f;
}

// Enabled on the device where offered, but no kernel uses them yet.
std::vector<std::string> features_recorded(const Capabilities& c) {
  std::vector<std::string> f;
  if (c.float16_arithmetic && !c.cooperative_matrix_nv) f.push_back("fp16 arithmetic");
  if (c.storage_8bit) f.push_back("8-bit storage");
  if (c.buffer_device_address && !decode_gemm_reads_addresses(c)) f.push_back("buffer device addresses");
  if (c.shader_int64 && !decode_gemm_reads_addresses(c)) f.push_back("64-bit integers");
  return f;
}

nlohmann::json to_json(const Capabilities& c, bool is_default) {
  nlohmann::json heaps = nlohmann::json::array();
  for (auto& h : c.heaps) heaps.push_back({{"bytes", h.size}, {"device_local", h.device_local}, {"host_visible", h.host_visible}});
  return {
      {"index", c.index},
      {"name", c.name},
      {"default", is_default},
      {"type", to_string(c.type)},
      {"vendor", c.vendor},
      {"vendor_id", c.vendor_id},
      {"device_id", c.device_id},
      {"driver_name", c.driver_name},
      {"driver_info", c.driver_info},
      {"driver_version", c.driver_version},
      {"api_version", c.api_version_string},
      {"device_uuid", uuid_hex(c.device_uuid)},
      {"limits",
       {{"max_shared_memory", c.max_shared_memory},
        {"max_workgroup_invocations", c.max_workgroup_invocations},
        {"max_workgroup_size", c.max_workgroup_size},
        {"max_workgroup_count", c.max_workgroup_count},
        {"max_storage_buffer_range", c.max_storage_buffer_range},
        {"max_memory_allocation_size", c.max_memory_allocation_size},
        {"min_storage_buffer_offset_alignment", c.min_storage_buffer_offset_alignment},
        {"max_push_constants_size", c.max_push_constants_size},
        {"subgroup_size", c.subgroup_size},
        {"min_subgroup_size", c.min_subgroup_size},
        {"max_subgroup_size", c.max_subgroup_size},
        {"timestamp_period_ns", c.timestamp_period_ns},
        {"timestamp_valid_bits", c.timestamp_valid_bits}}},
      {"memory_heaps", heaps},
      {"unified_memory", c.unified_memory},
      {"host_visible_device_memory", c.host_visible_device_memory},
      {"features_used", features_used(c)},
      {"features_recorded_unused", features_recorded(c)},
      {"quirks", c.quirks},
  };
}

std::string mib(uint64_t b) { return std::to_string(b >> 20) + " MiB"; }

}  // namespace

int info(const Args& args) {
  const bool json = args.flag("--json");
  ContextOptions options = context_options(args);
  const auto model = args.value("--model");
  if (args.given("--precision") && !model) throw Error("--precision is for --model DIR (the precision to load it in)");
  if (model) {
    if (is_gguf_file(*model)) {  // llama.cpp's one-file format: described, not loaded
      for (const char* option : {"--precision", "--weights"})
        if (args.given(option))
          throw Error(std::string(option) + " is for a model vkformer loads; info --model FILE.gguf describes the file");
      return gguf_info(*model, json);
    }
    checked_model_dir(*model);  // a clear error for a missing directory, a file, no config.json
    if (model_task(*model) == ModelTask::Forecaster)
      throw Error("model " + *model + " is a patch forecaster: `vkformer forecast --model " + *model +
                  "` runs it and prints its window and horizon; info --model describes generating models");
    if (args.given("--weights") && !model) throw Error("--weights is for --model DIR (the blocks to load it in)");
    return model_info(*model, json, options, load_options(args));
  }
  auto devices = list_devices(options);
  std::string choice = options.device;
  if (choice.empty())
    if (const char* env = std::getenv("VKF_DEVICE")) choice = env;
  const uint32_t chosen = choose_device(devices, choice);
  const Policy policy = options.policy ? *options.policy : Policy::from_environment();

  if (json) {
    nlohmann::json out = {{"vkformer_version", version()}, {"devices", nlohmann::json::array()},
                          {"policy", nlohmann::json::object()}};
    for (auto& d : devices) out["devices"].push_back(to_json(d, d.index == chosen));
    for (const auto& [name, value] : policy.settings()) out["policy"][name] = value;
    std::printf("%s\n", out.dump(2).c_str());
    return 0;
  }
  std::printf("vkformer %s: %zu Vulkan device%s\n", version(), devices.size(), devices.size() == 1 ? "" : "s");
  for (auto& c : devices) {
    std::printf("\n%s [%u] %s (%s, %s)\n", c.index == chosen ? "*" : " ", c.index, c.name.c_str(), to_string(c.type),
                c.vendor.c_str());
    std::printf("    driver     %s %s, Vulkan %s\n", c.driver_name.c_str(), c.driver_info.c_str(),
                c.api_version_string.c_str());
    std::printf("    ids        vendor 0x%04x device 0x%04x\n", c.vendor_id, c.device_id);
    std::printf("    compute    shared memory %u B, workgroup %u invocations (%u x %u x %u), subgroup %u (%u-%u)\n",
                c.max_shared_memory, c.max_workgroup_invocations, c.max_workgroup_size[0], c.max_workgroup_size[1],
                c.max_workgroup_size[2], c.subgroup_size, c.min_subgroup_size, c.max_subgroup_size);
    std::printf("    buffers    max storage range %s, max allocation %s\n", mib(c.max_storage_buffer_range).c_str(),
                mib(c.max_memory_allocation_size).c_str());
    std::string heaps;
    for (auto& h : c.heaps)
      heaps += (heaps.empty() ? "" : ", ") + mib(h.size) + (h.device_local ? " device-local" : " host") +
               (h.host_visible && h.device_local ? "+mappable" : "");
    std::printf("    memory     %s%s\n", heaps.c_str(),
                c.unified_memory ? " (unified)" : c.host_visible_device_memory ? " (discrete, host-mappable: resizable BAR)" : "");
    std::printf("    timestamps %s\n", c.timestamp_valid_bits ? (std::to_string(c.timestamp_period_ns) + " ns per tick").c_str()
                                                               : "not available on the compute queue");
    std::string used;
    for (auto& f : features_used(c)) used += (used.empty() ? "" : ", ") + f;
    std::printf("    uses       %s\n", used.empty() ? "(no optional features)" : used.c_str());
    std::string recorded;
    for (auto& f : features_recorded(c)) recorded += (recorded.empty() ? "" : ", ") + f;
    if (!recorded.empty()) std::printf("    recorded   %s (enabled, unused by any kernel yet)\n", recorded.c_str());
    for (auto& q : c.quirks) std::printf("    quirk      %s\n", q.c_str());
  }
  std::printf("\n* default device (choose with --device N|NAME or VKF_DEVICE)\n");
  std::string settings;
  for (const auto& [name, value] : policy.settings()) settings += (settings.empty() ? "" : ", ") + name + " " + value;
  std::printf("policy: %s (docs/cli.md: VKF_FOLD_NORMS, VKF_DECODE_PROJECTION, VKF_GEMM_TILES, ...)\n", settings.c_str());
  return 0;
}

}  // namespace vkf::cli
