#include "ops/grid.hpp"
#include "vkformer/ops.hpp"

namespace vkf {

namespace {
enum : uint32_t { kAdd = 0, kRelu = 1, kGelu = 2, kGeluTanh = 3 };
const char* kNames[] = {"add", "relu", "gelu", "gelu_tanh"};
}  // namespace

static void elementwise(Ops& ops, Kernel k, CommandList& cl, uint32_t op, const BufferView& a, const BufferView& b,
                        const BufferView& y, uint32_t count) {
  struct {
    uint32_t count, op;
  } push{count, op};
  cl.dispatch(k, ops::grid(ops::ceil_div(count, 256)), {in(a), in(b), out(y)}, push, kNames[op]);
  (void)ops;
}

void Ops::add(CommandList& cl, const BufferView& a, const BufferView& b, const BufferView& y, uint32_t count) {
  if (count == 0) return;
  need(a, count, "add", "a");
  need(b, count, "add", "b");
  need(y, count, "add", "y");
  elementwise(*this, kernel("elementwise.comp", {}, 3, 8), cl, kAdd, a, b, y, count);
}

void Ops::relu(CommandList& cl, const BufferView& x, const BufferView& y, uint32_t count) {
  if (count == 0) return;
  need(x, count, "relu", "x");
  need(y, count, "relu", "y");
  elementwise(*this, kernel("elementwise.comp", {}, 3, 8), cl, kRelu, x, x, y, count);
}

void Ops::gelu(CommandList& cl, const BufferView& x, const BufferView& y, uint32_t count, bool tanh_form) {
  if (count == 0) return;
  need(x, count, "gelu", "x");
  need(y, count, "gelu", "y");
  elementwise(*this, kernel("elementwise.comp", {}, 3, 8), cl, tanh_form ? kGeluTanh : kGelu, x, x, y, count);
}

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
  Kernel k = ctx_.kernel({.shader = "convert.comp", .defines = d, .bindings = 2, .push_constant_bytes = 4});
  cl.dispatch(k, ops::grid(ops::ceil_div(count, 256)), {in(src), out(dst)}, count,
              from == DType::F32 ? "convert fp32->fp16" : "convert fp16->fp32");
}

}  // namespace vkf
