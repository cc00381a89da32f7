// y = a + b, relu(x), gelu(x): one shader, the operation a push constant.
#include "grid.hpp"
#include "vkformer/ops.hpp"

namespace vkf {

namespace {
enum : uint32_t { kAdd = 0, kRelu = 1, kGelu = 2, kGeluTanh = 3 };
const char* const kNames[] = {"add", "relu", "gelu", "gelu_tanh"};

struct ElementwisePush {
  uint32_t count, op;
};
static_assert(sizeof(ElementwisePush) == 8, "matches Push in shaders/elementwise.comp");
}  // namespace

void Ops::elementwise(CommandList& cl, uint32_t op, const BufferView& a, const BufferView& b, const BufferView& y,
                      uint32_t count) {
  const char* name = kNames[op];
  need(a, count, name, op == kAdd ? "a" : "x");
  if (op == kAdd) need(b, count, name, "b");
  need(y, count, name, "y");
  const ElementwisePush push{count, op};
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

}  // namespace vkf
