#include <cmath>

#include "grid.hpp"
#include "vkformer/ops.hpp"

namespace vkf {

void Ops::repetition_penalty(CommandList& cl, const BufferView& logits, const BufferView& seen, const BufferView& ids,
                             uint32_t rows, uint32_t cols, float penalty) {
  if (rows == 0 || cols == 0) throw Error("repetition_penalty: rows and cols must be at least 1");
  if (!(penalty > 0) || !std::isfinite(penalty))
    throw Error("repetition_penalty: the penalty must be a positive number, got " + std::to_string(penalty));
  const uint32_t words = repetition_penalty_words(cols);
  need(logits, uint64_t(rows) * cols, "repetition_penalty", "logits");
  need(seen, uint64_t(rows) * words, "repetition_penalty", "seen", DType::F32);
  need(ids, rows, "repetition_penalty", "ids", DType::F32);
  if (rows > 65535) throw Error("repetition_penalty: more than 65535 rows");
  struct {
    uint32_t rows, cols, words;
    float penalty;
  } push{rows, cols, words, penalty};
  static_assert(sizeof push == 16, "matches Push in shaders/repetition_penalty.comp");
  cl.dispatch(kernel("repetition_penalty.comp", {}, 3, sizeof push), {uint32_t(ops::ceil_div(cols, 256)), rows, 1},
              {inout(logits), inout(seen), in(ids)}, push, "repetition_penalty");
}

}  // namespace vkf
