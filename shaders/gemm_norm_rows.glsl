// The statistics of a folded LayerNorm's rows for the tiled and direct GEMM kernels
// (gemm.comp, gemm_direct.comp): each workgroup computes the mean and 1/std of the
// NORM_ROWS rows it multiplies, before the product, so no layer_norm dispatch runs
// first. The rows are A's (FLAG_NORM_A, K values each) or the residual's (FLAG_NORM_R,
// N values). Each row is split into NORM_PARTS slices, one per invocation; each slice
// is summed twice (its mean, then squared deviations from it), and the slices are
// combined exactly (Chan et al.: M2 = M2_a + M2_b + (mean_a - mean_b)^2 n_a n_b / n),
// as the decode-step kernel does: E[v^2] - mean^2 would cancel when |mean| >> std.
// Two barriers, once per workgroup. The includer defines norm_source(z, m, i): element
// i of row m of A (or of the residual, under FLAG_NORM_R), for batch item z.
#ifndef VKF_GEMM_NORM_ROWS_GLSL
#define VKF_GEMM_NORM_ROWS_GLSL

shared float norm_part_count[NORM_ROWS * NORM_PARTS], norm_part_mean[NORM_ROWS * NORM_PARTS],
    norm_part_m2[NORM_ROWS * NORM_PARTS];

void norm_row_statistics(uint z, uint row0) {
  norm_row0 = row0;
  const uint wg = gl_WorkGroupSize.x, t = gl_LocalInvocationID.x;
  const uint count = flag(FLAG_NORM_R) ? pc.N : pc.K;
  for (uint w = t; w < NORM_ROWS * NORM_PARTS; w += wg) {
    const uint r = w % NORM_ROWS, part = w / NORM_ROWS;
    const uint m = min(row0 + r, pc.M - 1u);  // rows past the edge: any real row (never stored)
    float n = 0.0, sum = 0.0;
    for (uint i = part; i < count; i += NORM_PARTS) {
      sum += norm_source(z, m, i);
      n += 1.0;
    }
    const float mean = n > 0.0 ? sum / n : 0.0;
    float m2 = 0.0;
    for (uint i = part; i < count; i += NORM_PARTS) {
      const float d = norm_source(z, m, i) - mean;
      m2 += d * d;
    }
    norm_part_count[w] = n;
    norm_part_mean[w] = mean;
    norm_part_m2[w] = m2;
  }
  barrier();
  for (uint r = t; r < NORM_ROWS; r += wg) {
    float n = 0.0, mean = 0.0, m2 = 0.0;
    for (uint part = 0; part < NORM_PARTS; ++part) {
      const uint w = part * NORM_ROWS + r;
      const float nb = norm_part_count[w];
      if (nb == 0.0) continue;
      const float delta = norm_part_mean[w] - mean, total = n + nb;
      mean += delta * (nb / total);
      m2 += norm_part_m2[w] + delta * delta * (n * nb / total);
      n = total;
    }
    norm_rstd[r] = norm_scale(mean, m2, count);
    norm_mean[r] = norm_center(mean);
  }
  barrier();
}

#endif
