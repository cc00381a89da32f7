#include "gemm_operands.hpp"

#include <string>

#include "texels.hpp"

namespace vkf::ops {

// The small-M kernel's subgroup path: gl_SubgroupID and subgroupAdd (basic +
// arithmetic), at one fixed subgroup size, B a Linear weight.
bool small_m_subgroups(const Capabilities& caps, const Gemm& g) {
  return g.trans_b && caps.subgroup_basic && caps.subgroup_arithmetic && caps.min_subgroup_size == caps.max_subgroup_size &&
         caps.subgroup_size >= 4 && caps.subgroup_size <= 64;
}

// Asked for texels on a device whose driver reads them wrong (Capabilities::storage_texel_reads).
static Error texels_refused(const Capabilities& caps) {
  return Error("gemm: A and B cannot be read as texels on device '" + caps.name +
               "': a driver quirk disables its storage texel buffer reads (`vkformer info` lists it)");
}

// Whether an operand of the small-M kernel has every row, batch and its own start on a
// whole 16-byte unit of `dt` values (4 fp32, 8 fp16), as its 16-byte loads read them.
static bool rows_on_units(const GemmOperand& o, uint32_t ld, const Strides& stride, DType dt) {
  const uint32_t per_unit = 16 / dtype_bytes(dt);
  return ld % per_unit == 0 && o.base % per_unit == 0 && stride.outer % per_unit == 0 && stride.inner % per_unit == 0;
}

// Whether the small-M kernel reads A and B through their buffer addresses (ADDRESS_AB):
// where asked, else in fp32 on CPU drivers whose host gathers in hardware (AVX-512):
// llvmpipe's loads through addresses are hardware gathers where a texel is an indirect
// call. fp16 keeps texels (a texel carries 8 halves). Each unit is loaded as two 64-bit
// words (shaderInt64): llvmpipe gathers per component, so half the instructions. The
// measurements: docs/performance.md. Both views must start on 16 bytes and hold whole units.
bool small_m_addresses(const Capabilities& caps, const Gemm& g, DType dt, const GemmOperand& a,
                       const GemmOperand& b) {
  const uint32_t per_unit = 16 / dtype_bytes(dt);
  const bool fit = caps.buffer_device_address && caps.shader_int64 && small_m_subgroups(caps, g) && g.K % per_unit == 0 &&
                   a.start % 16 == 0 && b.start % 16 == 0 && rows_on_units(a, g.lda, g.stride_a, dt) &&
                   rows_on_units(b, g.ldb, g.stride_b, dt);
  if (g.address_weights == true && g.texel_weights == true)
    throw Error("gemm: A and B are read as texels or through addresses, not both (address_weights and texel_weights)");
  if (g.address_weights == true && !fit)
    throw Error("gemm: A and B cannot be read through buffer addresses on device '" + caps.name + "' (it needs " +
                (caps.buffer_device_address ? std::string() : "bufferDeviceAddress, which it lacks, ") +
                (caps.shader_int64 ? std::string() : "shaderInt64, which it lacks, ") +
                "the small-M kernel's subgroups, B a Linear weight, and A and B with K, rows, batches and offsets on " +
                "whole 16-byte units)");
  return fit && g.address_weights.value_or(caps.hardware_gathers && dt == DType::F32 && g.texel_weights != true);
}

// Whether the small-M kernel reads A and B as storage texel buffers (TEXEL_B): where
// asked, else on CPU drivers (lavapipe, Mesa 25.0.7 on 2 AMD EPYC cores, 1xNxK products
// of a Transformer-base: 2-2.5x a storage buffer's speed; GPUs keep storage buffers, on
// which texels were never measured). Each operand must start at a texel-aligned byte
// offset and every row and batch on a whole texel.
bool small_m_texels(const Capabilities& caps, const Gemm& g, DType dt, const GemmOperand& a,
                    const GemmOperand& b) {
  const uint32_t per_texel = 16 / dtype_bytes(dt);
  auto fits = [&](const GemmOperand& o, uint32_t ld, const Strides& stride) {
    return rows_on_units(o, ld, stride, dt) && ops::texel_view_fits(caps, o.start, o.bytes);
  };
  const bool fit = small_m_subgroups(caps, g) && g.K % per_texel == 0 && fits(a, g.lda, g.stride_a) &&
                   fits(b, g.ldb, g.stride_b);
  if (g.texel_weights == true && !caps.storage_texel_reads) throw texels_refused(caps);
  if (g.texel_weights == true && !fit)
    throw Error("gemm: A and B cannot be read as texels on device '" + caps.name + "' (it needs the small-M kernel's " +
                "subgroups, B a Linear weight, and A and B with K, rows, batches and offsets on whole 16-byte texels, " +
                "at most " + std::to_string(caps.max_texel_buffer_elements) + " texels each)");
  return fit && g.texel_weights.value_or(caps.type == DeviceType::Cpu);
}

// Whether the direct kernel reads A and B as storage texel buffers (TEXEL_AB, its vec4
// path): where Gemm::texel_weights says, else on CPU drivers (lavapipe, Mesa 25.0.7 on 2
// AMD EPYC cores: 1.2-1.4x at M = 24 to 256 with the same tiles, and the wider tiles of
// the default table then pay off), whenever both views start on texel-aligned bytes and
// their whole texels hold every element read (fp16: 8 to a texel).
bool direct_texels(const Capabilities& caps, const Gemm& g, DType dt, bool vec4_nt, const GemmOperand& a,
                   const GemmOperand& b) {
  auto whole = [&](const GemmOperand& o) {  // in fp16 (8 halves a texel) ending on a whole texel too
    return texel_view_fits(caps, o.start, o.bytes) && (dt != DType::F16 || o.bytes % 16 == 0);
  };
  const bool fit = vec4_nt && whole(a) && whole(b);
  if (g.texel_weights == true && !caps.storage_texel_reads) throw texels_refused(caps);
  if (g.texel_weights == true && !fit)
    throw Error("gemm: A and B cannot be read as texels on device '" + caps.name + "' (the direct kernel's texel " +
                "path needs A [M, K] and B [N, K] with K, rows and offsets multiples of 4, views starting on " +
                "texel-aligned bytes, at most " + std::to_string(caps.max_texel_buffer_elements) + " texels each)");
  return fit && g.texel_weights.value_or(caps.type == DeviceType::Cpu);
}

}  // namespace vkf::ops
