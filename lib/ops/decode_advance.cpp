// The end of a replayed greedy decode step: shaders/decode_advance.comp.
#include "vkformer/ops.hpp"

namespace vkf {

void Ops::decode_advance(CommandList& cl, const DecodeAdvance& a, const BufferView& next_ids,
                         const BufferView& input_ids, const BufferView& done, const BufferView& tokens,
                         const DecodeStep& step) {
  if (a.batch == 0 || a.capacity == 0) throw Error("decode_advance: batch and capacity must be at least 1");
  // uint32 buffers: fp32-sized elements.
  need(next_ids, a.batch, "decode_advance", "next_ids", DType::F32);
  need(input_ids, a.batch, "decode_advance", "input_ids", DType::F32);
  need(done, a.batch, "decode_advance", "done", DType::F32);
  need(tokens, uint64_t(a.capacity) * a.batch, "decode_advance", "tokens", DType::F32);
  need_step(step, "decode_advance");
  const struct {
    uint32_t batch, capacity, eos_id, stop_at_eos;
  } push{a.batch, a.capacity, a.eos_id, a.stop_at_eos ? 1u : 0u};
  static_assert(sizeof push == 16, "matches Push in shaders/decode_advance.comp");
  // Raw uint32 buffers: no storage-type variant.
  Kernel k = ctx_.kernel({.shader = "decode_advance.comp", .bindings = 5, .push_constant_bytes = sizeof push});
  cl.dispatch(k, {1, 1, 1}, {in(next_ids), out(input_ids), inout(done), out(tokens), inout(step.state)}, push,
              "decode_advance");
}

}  // namespace vkf
