// Between storage types: fp32 -> fp16 rounds to nearest even where the device can be
// told to (RoundingModeRTE), fp16 -> fp32 is exact.
#include "grid.hpp"
#include "vkformer/ops.hpp"

namespace vkf {

void Ops::convert(CommandList& cl, const BufferView& src, DType from, const BufferView& dst, DType to,
                  uint32_t count) {
  if (count == 0) return;
  need(src, count, "convert", "src", from);
  need(dst, count, "convert", "dst", to);
  if (from == to) {
    cl.copy(BufferView{src.alloc, src.offset, uint64_t(count) * dtype_bytes(from)},
            BufferView{dst.alloc, dst.offset, uint64_t(count) * dtype_bytes(to)});
    return;
  }
  if (!ctx_.capabilities().storage_16bit) throw Error("convert: this device has no 16-bit storage");
  Defines d;
  if (from == DType::F32) d.emplace_back("FROM_F32", "1");
  if (ctx_.capabilities().rounding_rte_fp16) d.emplace_back("VKF_RTE_FP16", "1");
  const uint32_t push = count;  // Push { uint count; } in shaders/convert.comp
  static_assert(sizeof push == 4);
  Kernel k = ctx_.kernel({.shader = "convert.comp", .defines = d, .bindings = 2, .push_constant_bytes = sizeof push});
  cl.dispatch(k, ops::grid(ops::ceil_div(count, 256)), {in(src), out(dst)}, push,
              from == DType::F32 ? "convert fp32->fp16" : "convert fp16->fp32");
}

}  // namespace vkf
