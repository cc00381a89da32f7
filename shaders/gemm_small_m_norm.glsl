// gemm_small_m.comp's NORM_FOLDED (host: a product with Gemm::norm_of): the statistics of
// the rows the folded norm normalises, once per workgroup before the product. Included
// after that kernel's bindings, push constants and a_vec4 (or a_at).
#ifndef VKF_GEMM_SMALL_M_NORM_GLSL
#define VKF_GEMM_SMALL_M_NORM_GLSL

#ifdef SUBGROUP_REDUCE
#define NORM_GROUPS gl_NumSubgroups
#define NORM_GROUP gl_SubgroupID
#define NORM_GROUP_LEADER (gl_SubgroupInvocationID == 0u)
vec4 norm_group_sum(vec4 v) { return subgroupAdd(v); }
#else
// Without subgroup arithmetic the whole workgroup is one group, summed in shared memory.
shared vec4 norm_scratch[WG_SIZE];
#define NORM_GROUPS 1u
#define NORM_GROUP 0u
#define NORM_GROUP_LEADER (gl_LocalInvocationID.x == 0u)
vec4 norm_group_sum(vec4 v) {
  const uint tid = gl_LocalInvocationID.x;
  norm_scratch[tid] = v;
  barrier();
  for (uint s = WG_SIZE / 2; s > 0; s >>= 1) {
    if (tid < s) norm_scratch[tid] += norm_scratch[tid + s];
    barrier();
  }
  const vec4 r = norm_scratch[0];
  barrier();
  return r;
}
#endif
// Each group's element count, mean and sum of squared deviations, one row per component.
shared vec4 norm_group_mean[WG_SIZE], norm_group_m2[WG_SIZE];
shared float norm_group_count[WG_SIZE];

// Element i of the row m that the folded norm normalises: A's (K values) or the
// residual's (N values).
float norm_input(uint z, uint m, uint i) {
  if (flag(FLAG_NORM_R)) return float(R[pc.base_r + batch_offset(z, pc.stride_r) + m * pc.ldr + i]);
  const uint at = offset_a(z) + m * pc.lda + i;
#ifdef VEC4_K
  return a_vec4(at / 4)[at % 4];
#else
  return float(A[at]);
#endif
}

// Mean and 1/std of each row, once per workgroup, stable and with one barrier: each
// group (a subgroup, or the workgroup without subgroup arithmetic) takes the mean of
// its elements and their squared deviations from it (two passes over a few values per
// invocation, summed without barriers), then every invocation combines the groups
// exactly (Chan et al.: M2 = M2_a + M2_b + (mean_a - mean_b)^2 n_a n_b / n). E[v^2] -
// mean^2 would cancel catastrophically when |mean| >> std.
void norm_statistics(uint z) {
  const uint count = flag(FLAG_NORM_R) ? pc.N : pc.K, tid = gl_LocalInvocationID.x;
  vec4 sum = vec4(0.0);
  float mine = 0.0;  // elements this invocation takes
  for (uint i = tid; i < count; i += WG_SIZE) mine += 1.0;
  UNROLL for (uint m = 0; m < MAX_M; ++m)
    if (m < pc.M)
      for (uint i = tid; i < count; i += WG_SIZE) sum[m] += norm_input(z, m, i);
  const float group_count = norm_group_sum(vec4(mine)).x;
  const vec4 group_mean = group_count > 0.0 ? norm_group_sum(sum) / group_count : vec4(0.0);
  vec4 m2 = vec4(0.0);
  UNROLL for (uint m = 0; m < MAX_M; ++m)
    if (m < pc.M)
      for (uint i = tid; i < count; i += WG_SIZE) {
        const float d = norm_input(z, m, i) - group_mean[m];
        m2[m] += d * d;
      }
  const vec4 group_m2 = norm_group_sum(m2);
  if (NORM_GROUP_LEADER) {
    norm_group_count[NORM_GROUP] = group_count;
    norm_group_mean[NORM_GROUP] = group_mean;
    norm_group_m2[NORM_GROUP] = group_m2;
  }
  barrier();
  float n = 0.0;
  vec4 mean = vec4(0.0), M2 = vec4(0.0);
  UNROLL for (uint g = 0; g < NORM_GROUPS; ++g) {
    const float nb = norm_group_count[g];
    if (nb == 0.0) continue;
    const vec4 delta = norm_group_mean[g] - mean;
    const float total = n + nb;
    mean += delta * (nb / total);
    M2 += norm_group_m2[g] + delta * delta * (n * nb / total);
    n = total;
  }
  UNROLL for (uint m = 0; m < MAX_M; ++m) {
    norm_mean[m] = m < pc.M ? norm_center(mean[m]) : 0.0;
    norm_rstd[m] = m < pc.M ? norm_scale(mean[m], M2[m], count) : 0.0;
  }
}


#endif
