// y = a + b, relu(x), gelu(x): one shader, the operation a push constant.
#include <iterator>

#include "grid.hpp"
#include "vkformer/ops.hpp"

namespace vkf {

namespace {
enum : uint32_t { kAdd = 0, kRelu = 1, kGelu = 2, kGeluTanh = 3, kSwiglu = 4, kOpCount };
const char* const kNames[] = {"add", "relu", "gelu", "gelu_tanh", "swiglu"};
static_assert(std::size(kNames) == kOpCount, "one name per operation");

struct ElementwisePush {
  uint32_t count, op, cols;
};
static_assert(sizeof(ElementwisePush) == 12, "matches Push in shaders/elementwise.comp");
}  // namespace

void Ops::elementwise(CommandList& cl, uint32_t op, const BufferView& a, const BufferView& b, const BufferView& y,
                      uint32_t count) {
  const char* name = kNames[op];
  need(a, count, name, op == kAdd ? "a" : "x");
  if (op == kAdd) need(b, count, name, "b");
  need(y, count, name, "y");
  const ElementwisePush push{count, op, 0};
  cl.dispatch(kernel("elementwise.comp", {}, 3, sizeof push), ops::grid(ops::ceil_div(count, 256)),
              {in(a), in(b), out(y)}, push, name);
}

void Ops::add(CommandList& cl, const BufferView& a, const BufferView& b, const BufferView& y, uint32_t count) {
  if (count) elementwise(cl, kAdd, a, b, y, count);
}

void Ops::relu(CommandList& cl, const BufferView& x, const BufferView& y, uint32_t count) {
  if (count) elementwise(cl, kRelu, x, x, y, count);
}

void Ops::gelu(CommandList& cl, const BufferView& x, const BufferView& y, uint32_t count, bool tanh_form) {
  if (count) elementwise(cl, tanh_form ? kGeluTanh : kGelu, x, x, y, count);
}

void Ops::swiglu(CommandList& cl, const BufferView& x, const BufferView& y, uint32_t rows, uint32_t cols) {
  if (!rows || !cols) throw Error("swiglu: rows and cols must be at least 1");
  const uint64_t count = uint64_t(rows) * cols;
  if (2 * count > 0xffffffffull) throw Error("swiglu: more than 2^31 elements");
  need(x, 2 * count, "swiglu", "x");
  need(y, count, "swiglu", "y");
  const ElementwisePush push{uint32_t(count), kSwiglu, cols};
  cl.dispatch(kernel("elementwise.comp", {}, 3, sizeof push), ops::grid(ops::ceil_div(count, 256)),
              {in(x), in(x), out(y)}, push, "swiglu");
}

}  // namespace vkf
