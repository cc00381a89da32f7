#pragma once
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "vkformer/ops.hpp"

namespace vkf::cli {

// Median seconds per call of `run`, repeated until ~min_seconds have passed (at least 3,
// at most 50), after one untimed warm-up call.
double time_median(const std::function<void()>& run, double min_seconds = 0.3);
// Records `reps` copies of one op into a list and times its submits: seconds per op.
double time_gpu(Context& ctx, uint32_t reps, const std::function<void(CommandList&)>& record, double min_seconds = 0.3);

// Kernel throughput beside same-run baselines (OpenBLAS sgemm, unfused attention).
// max_size: the largest square GEMM (0: 4096, or 2048 on CPU drivers).
nlohmann::json bench_ops(Context& ctx, DType dtype, bool quick, bool print, uint32_t max_size = 0);
// Greedy decoding speed of a model directory (tokens/s), and a translation workload;
// rounds: timed rounds, medians reported (0: 3, or 1 with quick).
nlohmann::json bench_model(Context& ctx, const std::string& model_dir, DType dtype, bool quick, bool print, int rounds = 0);
// An SVG chart comparing the runs (devices, drivers, settings) of one or more reports.
std::string bench_chart(const std::vector<nlohmann::json>& reports);

}  // namespace vkf::cli
