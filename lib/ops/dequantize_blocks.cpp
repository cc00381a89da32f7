// A weight in blocks dequantized into the storage type (shaders/dequantize_blocks.comp):
// a prompt's products read the copy (Ops::gemm with GemmOperands::scratch).
#include "block_weights.hpp"
#include "grid.hpp"
#include "vkformer/tensor_io.hpp"

namespace vkf {

void Ops::dequantize_blocks(CommandList& cl, BlockType t, const BufferView& blocks, const BufferView& dst, uint32_t rows,
                            uint32_t cols) {
  if (rows == 0 || cols == 0 || cols % block_values(t))
    throw Error("dequantize_blocks: [" + std::to_string(rows) + ", " + std::to_string(cols) + "] is not whole rows of " +
                std::to_string(block_values(t)) + "-value " + block_type_name(t) + " blocks");
  const uint64_t bytes = block_weight_bytes(t, rows, cols);
  if (!blocks.alloc || blocks.size < bytes)
    throw Error("dequantize_blocks: the " + std::string(block_type_name(t)) + " weight needs " + std::to_string(bytes) +
                " bytes but its view holds " + std::to_string(blocks.size));
  need(dst, uint64_t(rows) * cols, "dequantize_blocks", "out");
  const Placed pb = place(blocks, "dequantize_blocks"), po = place(dst, "dequantize_blocks");
  if (pb.base || po.base) throw Error("dequantize_blocks: the views must start at descriptor-aligned offsets");
  const struct {
    uint32_t blocks, K;
  } push{uint32_t(uint64_t(rows) * cols / kBlockValues), cols};
  Kernel k = kernel("dequantize_blocks.comp", ops::block_defines(t, ctx_.capabilities()), 2, sizeof push);
  cl.dispatch(k, ops::grid(ops::ceil_div(push.blocks, 64)), {in(pb.view), out(po.view)}, push,
              std::string("dequantize_blocks ") + block_type_name(t));
}

}  // namespace vkf
