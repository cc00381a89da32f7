// `vkformer bench ops`: kernel throughput beside a baseline measured in the same run:
// OpenBLAS sgemm on the same cores for GEMM, the unfused path for attention.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <nlohmann/json.hpp>
#include <vector>

#ifdef VKF_HAVE_OPENBLAS
#include <cblas.h>
#endif

#include "commands.hpp"
#include "bench.hpp"
#include "vkformer/tensor_io.hpp"
#include "vkformer/gemm_tuning.hpp"
#include "vkformer/ops.hpp"

namespace vkf::cli {

namespace {

using clock_type = std::chrono::steady_clock;

}  // namespace

double time_median(const std::function<void()>& run, double min_seconds) {
  run();  // warm-up: pipeline compile, caches
  std::vector<double> t;
  const auto start = clock_type::now();
  while (t.size() < 3 || (std::chrono::duration<double>(clock_type::now() - start).count() < min_seconds && t.size() < 50)) {
    auto t0 = clock_type::now();
    run();
    t.push_back(std::chrono::duration<double>(clock_type::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

double time_gpu(Context& ctx, uint32_t reps, const std::function<void(CommandList&)>& record, double min_seconds) {
  CommandList cl = ctx.command_list();
  for (uint32_t r = 0; r < reps; ++r) record(cl);
  return time_median([&] { cl.submit(); }, min_seconds) / reps;
}

namespace {

uint32_t reps_for(double flops_or_bytes, double per_second_guess) {
  return uint32_t(std::clamp(0.05 * per_second_guess / flops_or_bytes, 1.0, 200.0));
}

}  // namespace

nlohmann::json bench_ops(Context& ctx, DType dt, bool quick, bool print, uint32_t max_size) {
  Ops ops(ctx, dt);
  const auto& caps = ctx.capabilities();
  const std::string precision = to_string(dt);
  nlohmann::json out = {{"gemm", nlohmann::json::array()}, {"gemm_shapes", nlohmann::json::array()},
                        {"softmax", nlohmann::json::array()},
                        {"layer_norm", nlohmann::json::array()}, {"attention", nlohmann::json::array()}};
  auto say = [&](const char* fmt, auto... a) {
    if (print) std::printf(fmt, a...);
  };
  // Inputs hold real values in the benchmarked precision: uninitialised memory may
  // hold NaNs or denormals, which some devices (CPUs) process far more slowly.
  auto filled = [&](uint64_t n, const char* name) {
    std::vector<float> v(n);
    for (uint64_t i = 0; i < n; ++i) v[i] = float((i * 7919) % 1000) / 1000.0f - 0.5f;
    return upload_floats(ctx, v, dt, name);
  };
  say("vkformer %s bench ops on %s (%s), %s storage\n", version(), caps.name.c_str(), caps.driver_info.c_str(),
      precision.c_str());

  // GEMM: C = A B^T, the Linear-layer layout, timed on the GPU per product and beside
  // OpenBLAS sgemm on this machine's cores (its fp32 whatever --precision says).
  // tools/bench_gemm_torch.py times torch.matmul at the same sizes from the JSON report.
  auto gemm_row = [&](const std::string& name, uint32_t M, uint32_t N, uint32_t K) {
    Buffer a = filled(uint64_t(M) * K, "A"), b = filled(uint64_t(N) * K, "B");
    Buffer c = ctx.buffer(uint64_t(M) * N * dtype_bytes(dt), "C");
    const double flops = 2.0 * M * N * K;
    const double s = time_gpu(ctx, reps_for(flops, 5e9), [&](CommandList& cl) {
      ops.gemm(cl, {.M = M, .N = N, .K = K, .trans_b = true}, {.a = a.view(), .b = b.view(), .c = c.view()});
    });
    double blas = 0;
#ifdef VKF_HAVE_OPENBLAS
    std::vector<float> ha(uint64_t(M) * K), hb(uint64_t(N) * K), hc(uint64_t(M) * N);
    for (uint64_t i = 0; i < ha.size(); ++i) ha[i] = float((i * 7919) % 1000) / 1000.0f - 0.5f;
    for (uint64_t i = 0; i < hb.size(); ++i) hb[i] = float((i * 7919) % 1000) / 1000.0f - 0.5f;
    blas = flops / time_median([&] {
             cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, int(M), int(N), int(K), 1.0f, ha.data(), int(K),
                         hb.data(), int(K), 0.0f, hc.data(), int(N));
           }) / 1e9;
#endif
    const double gf = flops / s / 1e9, ratio = blas > 0 ? gf / blas : 0.0;
    const Gemm g{.M = M, .N = N, .K = K, .trans_b = true};
    const std::string variant = ops.gemm_variant(g);
    nlohmann::json row{{"m", M}, {"n", N}, {"k", K}, {"gflops", gf}, {"us", s * 1e6}, {"openblas_gflops", blas},
                       {"ratio", ratio}, {"variant", variant}};
    // A tuned variant (vkformer tune) is timed beside the default table's in the same run.
    std::string tuned;
    if (variant.rfind("small_m", 0) != 0 && ops.default_gemm_tiles(g).name() != variant) {
      Gemm d = g;
      d.tiles = ops.default_gemm_tiles(g);
      const double sd = time_gpu(ctx, reps_for(flops, 5e9), [&](CommandList& cl) {
        ops.gemm(cl, d, {.a = a.view(), .b = b.view(), .c = c.view()});
      });
      row["default_variant"] = d.tiles->name();
      row["tuned_speedup"] = sd / s;
      char text[96];
      std::snprintf(text, sizeof text, " (tuned: %.2fx the default %s)", sd / s, d.tiles->name().c_str());
      tuned = text;
    }
    say("%-24s %12.2f %10.1f %14.2f %8.3f  %s%s\n", name.c_str(), gf, s * 1e6, blas, ratio, variant.c_str(), tuned.c_str());
    return row;
  };
  say("\n%-24s %12s %10s %14s %8s  %s\n", "gemm (A B^T)", "GFLOP/s", "us", "OpenBLAS", "ratio", "variant");
  // Squares up to 4096 (2048 on CPU drivers, where 4096^3 takes minutes; --max-size).
  const uint32_t largest = max_size ? max_size : caps.type == DeviceType::Cpu ? 2048 : 4096;
  std::vector<uint32_t> sizes;
  for (uint32_t n = 64; n <= largest; n *= 2)
    if (!quick || n == 64 || n == 256) sizes.push_back(n);
  for (uint32_t n : sizes) {
    nlohmann::json row = gemm_row(std::to_string(n) + "^3", n, n, n);
    row["n"] = n;
    out["gemm"].push_back(row);
  }
  // The products a Transformer-base decoder and encoder run: M rows (1: a decode step at
  // batch 1; 24: a 24-token source; 32: a decode step at batch 32; 256: a long batch)
  // by the attention projections (512x512), FFN up (2048x512), FFN down (512x2048) and
  // the generator (32000x512), as N x K.
  const std::vector<uint32_t> rows = quick ? std::vector<uint32_t>{1, 24} : std::vector<uint32_t>{1, 24, 32, 256};
  const std::vector<std::pair<uint32_t, uint32_t>> layers =
      quick ? std::vector<std::pair<uint32_t, uint32_t>>{{512, 512}}
            : std::vector<std::pair<uint32_t, uint32_t>>{{512, 512}, {2048, 512}, {512, 2048}, {32000, 512}};
  for (uint32_t M : rows)
    for (auto [N, K] : layers)
      out["gemm_shapes"].push_back(
          gemm_row(std::to_string(M) + "x" + std::to_string(N) + "x" + std::to_string(K), M, N, K));

  // Softmax and LayerNorm: effective bandwidth of one read and one write of the tensor.
  say("\n%-24s %12s %14s\n", "softmax / layer_norm", "GB/s", "");
  std::vector<std::pair<uint32_t, uint32_t>> shapes = quick ? std::vector<std::pair<uint32_t, uint32_t>>{{256, 512}}
                                                            : std::vector<std::pair<uint32_t, uint32_t>>{{4096, 512}, {64, 32000}, {1024, 4096}};
  for (const auto& shape : shapes) {
    const uint32_t rows = shape.first, cols = shape.second;  // (not a structured binding: the lambdas capture them)
    const uint64_t elems = uint64_t(rows) * cols, bytes = 2 * elems * dtype_bytes(dt);
    Buffer x = filled(elems, "x"), y = ctx.buffer(elems * dtype_bytes(dt), "y");
    Buffer g = filled(cols, "gamma");
    const double sm = bytes / time_gpu(ctx, reps_for(double(bytes), 2e9), [&](CommandList& cl) {
      ops.softmax(cl, {.rows = rows, .cols = cols}, x.view(), y.view());
    }) / 1e9;
    const double ln = bytes / time_gpu(ctx, reps_for(double(bytes), 2e9), [&](CommandList& cl) {
      ops.layer_norm(cl, {.rows = rows, .cols = cols}, x.view(), g.view(), g.view(), y.view());
    }) / 1e9;
    const std::string name = std::to_string(rows) + "x" + std::to_string(cols);
    say("%-24s %12.2f %14s\n", ("softmax " + name).c_str(), sm, "");
    say("%-24s %12.2f %14s\n", ("layer_norm " + name).c_str(), ln, "");
    out["softmax"].push_back({{"rows", rows}, {"cols", cols}, {"gbps", sm}});
    out["layer_norm"].push_back({{"rows", rows}, {"cols", cols}, {"gbps", ln}});
  }

  // Attention: each fused kernel that runs here against the unfused path, batch 1, 8
  // causal heads of 64; "fused" is the kernel attention() picks here (tuned or default).
  const Attention probe{.heads = 8, .head_dim = 64, .q_len = 16, .kv_len = 16};
  std::vector<AttentionKernel> kernels;
  for (AttentionKernel k : kAttentionKernels)
    if (attention_kernel_problem(caps, k, probe.head_dim, dt).empty()) kernels.push_back(k);
  say("\n%-24s %12s", "attention (8x64)", "fused ms");
  for (AttentionKernel k : kernels) say(" %9s ms", attention_kernel_name(k));
  say(" %14s %8s\n", "unfused ms", "speedup");
  std::vector<uint32_t> lens = quick ? std::vector<uint32_t>{16, 64} : std::vector<uint32_t>{16, 64, 256, 1024};
  for (uint32_t L : lens) {
    const uint32_t H = 8, d = 64;
    const uint64_t elems = uint64_t(L) * H * d;
    Buffer q = filled(elems, "q"), o = ctx.buffer(elems * dtype_bytes(dt), "o");
    Buffer scores = ctx.buffer(uint64_t(H) * L * L * dtype_bytes(dt), "scores");
    Attention at{.heads = H, .head_dim = d, .q_len = L, .kv_len = L, .causal = true};
    const double work = 4.0 * H * L * L * d;
    const AttentionKernel chosen = ops.attention_kernel(at);
    nlohmann::json per_kernel = nlohmann::json::object();
    double fused = 0;
    for (AttentionKernel k : kernels) {
      Attention ak = at;
      ak.kernel = k;
      const double t = time_gpu(ctx, reps_for(work, 2e9), [&](CommandList& cl) {
        ops.attention(cl, ak, q.view(), q.view(), q.view(), o.view());
      });
      per_kernel[attention_kernel_name(k)] = t * 1e3;
      if (k == chosen) fused = t;
    }
    const double unfused = time_gpu(ctx, reps_for(work, 2e9), [&](CommandList& cl) {
      ops.attention_unfused(cl, at, q.view(), q.view(), q.view(), o.view(), scores.view());
    });
    say("%-24s %12.3f", ("seq " + std::to_string(L)).c_str(), fused * 1e3);
    for (AttentionKernel k : kernels) say(" %12.3f", per_kernel[attention_kernel_name(k)].get<double>());
    say(" %14.3f %8.2f\n", unfused * 1e3, unfused / fused);
    out["attention"].push_back({{"seq", L}, {"heads", H}, {"head_dim", d}, {"kernel", attention_kernel_name(chosen)},
                                {"fused_ms", fused * 1e3}, {"kernels_ms", per_kernel}, {"unfused_ms", unfused * 1e3},
                                {"speedup", unfused / fused}});
  }
  return out;
}

}  // namespace vkf::cli
