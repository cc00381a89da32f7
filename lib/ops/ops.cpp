#include "vkformer/ops.hpp"

#include <algorithm>
#include <cstddef>
#include <string>

#include "decode_step.h"

namespace vkf {

const char* to_string(DType t) { return t == DType::F16 ? "fp16" : "fp32"; }

Ops::Ops(Context& ctx, DType dtype) : ctx_(ctx), dtype_(dtype) {
  if (dtype == DType::F16 && !ctx.capabilities().storage_16bit)
    throw Error("fp16 storage was requested but device '" + ctx.capabilities().name +
                "' lacks storageBuffer16BitAccess; use fp32");
}

Kernel Ops::kernel(const char* shader, Defines defines, uint32_t bindings, uint32_t push_bytes,
                   std::vector<uint32_t> spec, std::vector<TexelFormat> texels) {
  if (dtype_ == DType::F16) {
    defines.emplace_back("VKF_FP16_STORAGE", "1");
    // fp16 results round to nearest even, as the host's float_to_half and PyTorch do.
    if (ctx_.capabilities().rounding_rte_fp16) defines.emplace_back("VKF_RTE_FP16", "1");
  }
  // Constant-count loops unrolled (types.glsl's UNROLL): GPUs' compilers otherwise may
  // keep per-invocation arrays in local memory; CPU drivers unroll as they need (under
  // the portable profile too: lavapipe took minutes more to compile the unrolled tiles).
  if (!ctx_.capabilities().cpu_driver) defines.emplace_back("VKF_UNROLL", "1");
  return ctx_.kernel({.shader = shader,
                      .defines = std::move(defines),
                      .bindings = bindings,
                      .push_constant_bytes = push_bytes,
                      .spec_constants = std::move(spec),
                      .texel_formats = std::move(texels)});
}

Ops::Placed Ops::place(const BufferView& v, const char* op) const {
  const uint32_t elem = dtype_bytes(dtype_);
  if (v.offset % elem) throw Error(std::string(op) + ": a view offset is not a whole number of elements");
  const uint64_t align = std::max<uint64_t>(ctx_.capabilities().min_storage_buffer_offset_alignment, 1);
  const uint64_t rem = v.offset % align;  // allocations themselves start aligned
  if (rem % elem) throw Error(std::string(op) + ": view offset cannot be expressed in elements on this device");
  return {BufferView{v.alloc, v.offset - rem, v.size + rem}, uint32_t(rem / elem)};
}

static_assert(sizeof(DecodeStep::State) == DECODE_STATE_WORDS * 4, "DecodeStep::State matches shaders/decode_step.h");
static_assert(offsetof(DecodeStep::State, step) == DECODE_STEP_WORD * 4 &&
              offsetof(DecodeStep::State, position) == DECODE_POSITION_WORD * 4 &&
              offsetof(DecodeStep::State, key_count) == DECODE_KEY_COUNT_WORD * 4);

void Ops::need_step(const DecodeStep& step, const char* op) const {
  need(step.state, DECODE_STATE_WORDS, op, "decode step state", DType::F32);  // uint32 words: fp32-sized
}

void Ops::need(const BufferView& v, uint64_t elements, const char* op, const char* what, DType t) const {
  if (!v.alloc) throw Error(std::string(op) + ": " + what + " is an empty buffer");
  const uint64_t bytes = elements * dtype_bytes(t);
  if (v.size < bytes)
    throw Error(std::string(op) + ": " + what + " needs " + std::to_string(elements) + " " + to_string(t) +
                " elements (" + std::to_string(bytes) + " bytes) but its buffer view holds " + std::to_string(v.size) +
                " bytes");
  if (elements > 0xffffffffull) throw Error(std::string(op) + ": " + what + " has more than 2^32 elements");
}

}  // namespace vkf
