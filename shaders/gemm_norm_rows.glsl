// The statistics of a folded LayerNorm's rows for the tiled and direct GEMM kernels
// (gemm.comp, gemm_direct.comp): each workgroup computes the mean and 1/std of the
// NORM_ROWS rows it multiplies, before the product, so no layer_norm dispatch runs
// first. The rows are A's (FLAG_NORM_A, K values each) or the residual's (FLAG_NORM_R,
// N values). Each row is split into slices, one per invocation; each slice
// is summed twice (its mean, then squared deviations from it), and the slices are
// combined exactly (Chan et al.: M2 = M2_a + M2_b + (mean_a - mean_b)^2 n_a n_b / n),
// as the decode-step kernel does: E[v^2] - mean^2 would cancel when |mean| >> std.
// Two barriers, once per workgroup. The includer defines norm_source(z, m, i): element
// i of row m of A (or of the residual, under FLAG_NORM_R), for batch item z; and, with
// NORM_SOURCE4, norm_source4(z, m, q): elements 4q .. 4q + 3 of A's row m.
#ifndef VKF_GEMM_NORM_ROWS_GLSL
#define VKF_GEMM_NORM_ROWS_GLSL

shared float norm_part_count[NORM_ROWS * NORM_PARTS], norm_part_mean[NORM_ROWS * NORM_PARTS],
    norm_part_m2[NORM_ROWS * NORM_PARTS];

void norm_row_statistics(uint z, uint row0) {
  norm_row0 = row0;
  const uint wg = gl_WorkGroupSize.x, t = gl_LocalInvocationID.x;
  const uint count = flag(FLAG_NORM_R) ? pc.N : pc.K;
  // Only the tile's real rows (24 of 64 at a 24-token source), each in P adjacent slices
  // (as many as the NORM_ROWS * NORM_PARTS slots allow), slice `part` taking elements
  // part, part + P, ...: adjacent invocations read adjacent elements of one row. Rows
  // past the edge are never stored and get no statistics. (Every row in NORM_PARTS
  // slices, row-major across invocations, ran 10x slower than the product itself, on
  // lavapipe and on an H200: 2.5 ms for a 24x2048x512 product there.)
  const uint rows = min(NORM_ROWS, pc.M - min(row0, pc.M));
  const uint P = rows > 0u ? max(1u, min(NORM_ROWS * NORM_PARTS, wg) / rows) : 1u;
  for (uint w = t; w < rows * P; w += wg) {
    const uint r = w / P, part = w % P, m = row0 + r;
    // A's rows as vec4s where the includer reads them so (K a multiple of 4 there); the
    // residual's, and every row elsewhere, as scalars.
    float n = 0.0, sum = 0.0;
#ifdef NORM_SOURCE4
    if (!flag(FLAG_NORM_R)) {
      for (uint q = part; q < count / 4u; q += P, n += 4.0) {
        const vec4 v = norm_source4(z, m, q);
        sum += (v.x + v.y) + (v.z + v.w);
      }
    } else
#endif
      for (uint i = part; i < count; i += P, n += 1.0) sum += norm_source(z, m, i);
    const float mean = n > 0.0 ? sum / n : 0.0;
    float m2 = 0.0;
#ifdef NORM_SOURCE4
    if (!flag(FLAG_NORM_R)) {
      for (uint q = part; q < count / 4u; q += P) {
        const vec4 d = norm_source4(z, m, q) - mean;
        m2 += dot(d, d);
      }
    } else
#endif
      for (uint i = part; i < count; i += P) {
        const float d = norm_source(z, m, i) - mean;
        m2 += d * d;
      }
    norm_part_count[w] = n;
    norm_part_mean[w] = mean;
    norm_part_m2[w] = m2;
  }
  barrier();
  for (uint r = t; r < rows; r += wg) {
    float n = 0.0, mean = 0.0, m2 = 0.0;
    UNROLL for (uint part = 0; part < P; ++part) {
      const uint w = r * P + part;
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
