#include "vkformer/ops.hpp"

#include <algorithm>
#include <string>

namespace vkf {

const char* to_string(DType t) { return t == DType::F16 ? "fp16" : "fp32"; }

Ops::Ops(Context& ctx, DType dtype) : ctx_(ctx), dtype_(dtype) {
  if (dtype == DType::F16 && !ctx.capabilities().storage_16bit)
    throw Error("fp16 storage was requested but device '" + ctx.capabilities().name +
                "' lacks storageBuffer16BitAccess; use fp32");
}

Kernel Ops::kernel(const char* shader, Defines defines, uint32_t bindings, uint32_t push_bytes,
                   std::vector<uint32_t> spec) {
  if (dtype_ == DType::F16) defines.emplace_back("VKF_FP16_STORAGE", "1");
  return ctx_.kernel({.shader = shader,
                      .defines = std::move(defines),
                      .bindings = bindings,
                      .push_constant_bytes = push_bytes,
                      .spec_constants = std::move(spec)});
}

Ops::Placed Ops::place(const BufferView& v, const char* op) const {
  const uint32_t elem = dtype_bytes(dtype_);
  if (v.offset % elem) throw Error(std::string(op) + ": a view offset is not a whole number of elements");
  const uint64_t align = std::max<uint64_t>(ctx_.capabilities().min_storage_buffer_offset_alignment, 1);
  const uint64_t rem = v.offset % align;  // allocations themselves start aligned
  if (rem % elem) throw Error(std::string(op) + ": view offset cannot be expressed in elements on this device");
  return {BufferView{v.alloc, v.offset - rem, v.size + rem}, uint32_t(rem / elem)};
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
