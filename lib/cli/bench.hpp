#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "vkformer/ops.hpp"

namespace vkf::cli {

// Kernel throughput beside same-run baselines (OpenBLAS sgemm, unfused attention).
nlohmann::json bench_ops(Context& ctx, DType dtype, bool quick, bool print);
// Greedy decoding speed of a model directory (tokens/s), and a translation workload.
nlohmann::json bench_model(Context& ctx, const std::string& model_dir, DType dtype, bool quick, bool print);
// An SVG chart comparing the runs (devices, drivers, settings) of one or more reports.
std::string bench_chart(const std::vector<nlohmann::json>& reports);

}  // namespace vkf::cli
