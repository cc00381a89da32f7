// ggml's Vulkan backend timing C = A B^T at the shapes `vkformer bench ops` runs, f32,
// for tools/bench_ggml/run.sh, which puts the two side by side in one run. Built against
// a ggml source tree the user fetched (run.sh); none of ggml's code is in vkformer.
//
//   bench_ggml [--json] [--device N]    one line per shape: "M N K GFLOP/s"
//
// Ten products per graph (as the issue that asked for this comparison measured), each
// graph computed until 0.3 s have passed and at least three times; the median.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml-vulkan.h"
#include "ggml.h"

namespace {

double seconds_per_product(ggml_backend_t backend, int M, int N, int K) {
  const int kProducts = 10;
  ggml_init_params params{.mem_size = ggml_tensor_overhead() * (3 * kProducts + 8) + ggml_graph_overhead(),
                          .mem_buffer = nullptr,
                          .no_alloc = true};
  ggml_context* ctx = ggml_init(params);
  // ggml_mul_mat(w, x): w [K, N] (ne0 = K), x [K, M] -> [N, M], i.e. x w^T: A B^T with A = x.
  ggml_tensor* w = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, K, N);
  std::vector<ggml_tensor*> xs;
  for (int i = 0; i < kProducts; ++i) xs.push_back(ggml_new_tensor_2d(ctx, GGML_TYPE_F32, K, M));
  ggml_cgraph* graph = ggml_new_graph(ctx);
  for (int i = 0; i < kProducts; ++i) ggml_build_forward_expand(graph, ggml_mul_mat(ctx, w, xs[i]));
  ggml_backend_buffer_t buffer = ggml_backend_alloc_ctx_tensors(ctx, backend);
  std::vector<float> fill(size_t(std::max(M, N)) * K);
  for (size_t i = 0; i < fill.size(); ++i) fill[i] = float((i * 7919) % 1000) / 1000.0f - 0.5f;
  ggml_backend_tensor_set(w, fill.data(), 0, size_t(N) * K * sizeof(float));
  for (ggml_tensor* x : xs) ggml_backend_tensor_set(x, fill.data(), 0, size_t(M) * K * sizeof(float));
  ggml_backend_graph_compute(backend, graph);  // warm-up: pipelines
  std::vector<double> t;
  const auto start = std::chrono::steady_clock::now();
  auto since = [](auto t0) { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  while (t.size() < 3 || (since(start) < 0.3 && t.size() < 50)) {
    const auto t0 = std::chrono::steady_clock::now();
    ggml_backend_graph_compute(backend, graph);
    t.push_back(since(t0));
  }
  std::sort(t.begin(), t.end());
  ggml_backend_buffer_free(buffer);
  ggml_free(ctx);
  return t[t.size() / 2] / kProducts;
}

}  // namespace

int main(int argc, char** argv) {
  int device = 0;
  for (int i = 1; i < argc; ++i)
    if (!std::strcmp(argv[i], "--device") && i + 1 < argc) device = std::atoi(argv[++i]);
  ggml_backend_t backend = ggml_backend_vk_init(device);
  if (!backend) {
    std::fprintf(stderr, "bench_ggml: no Vulkan device %d for ggml (GGML_VK_VISIBLE_DEVICES?)\n", device);
    return 1;
  }
  std::vector<int> squares;
  for (int n = 64; n <= 2048; n *= 2) squares.push_back(n);
  for (int n : squares) {
    const double s = seconds_per_product(backend, n, n, n);
    std::printf("%d %d %d %.3f\n", n, n, n, 2.0 * n * n * n / s / 1e9);
    std::fflush(stdout);
  }
  const int rows[] = {1, 24, 32, 256};
  const int layers[][2] = {{512, 512}, {2048, 512}, {512, 2048}, {32000, 512}};
  for (int M : rows)
    for (const auto& l : layers) {
      const double s = seconds_per_product(backend, M, l[0], l[1]);
      std::printf("%d %d %d %.3f\n", M, l[0], l[1], 2.0 * M * l[0] * l[1] / s / 1e9);
      std::fflush(stdout);
    }
  ggml_backend_free(backend);
  return 0;
}
