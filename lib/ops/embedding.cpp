#include <cmath>

#include "block_weights.hpp"
#include "grid.hpp"
#include "vkformer/tensor_io.hpp"
#include "vkformer/ops.hpp"

namespace vkf {

std::vector<float> sinusoidal_positions(uint32_t positions, uint32_t dim, bool halves) {
  std::vector<float> pe(size_t(positions) * dim);
  const uint32_t sines = (dim + 1) / 2;
  for (uint32_t p = 0; p < positions; ++p)
    for (uint32_t c = 0; c < dim; ++c) {
      // The frequency index i (angle p / 10000^(2i/dim)) and whether the channel is a cosine.
      const uint32_t i = halves ? (c < sines ? c : c - sines) : c / 2;
      const bool cosine = halves ? c >= sines : c % 2 == 1;
      const double angle = p / std::pow(10000.0, double(2 * i) / dim);
      pe[size_t(p) * dim + c] = float(cosine ? std::cos(angle) : std::sin(angle));
    }
  return pe;
}

void Ops::embedding(CommandList& cl, const Embedding& e, const BufferView& ids, const BufferView& table,
                    const std::optional<BufferView>& pe, const BufferView& out_view,
                    const std::optional<DecodeStep>& step, const std::optional<BufferView>& position_shift,
                    const std::optional<BufferView>& type_ids, const std::optional<BufferView>& type_table) {
  if (e.rows == 0 || e.dim == 0 || e.vocab == 0 || e.seq_len == 0)
    throw Error("embedding: rows, vocab, dim and seq_len must be at least 1");
  need(ids, e.rows, "embedding", "ids", DType::F32);  // uint32: same size as fp32
  if (e.table_blocks) {
    if (e.dim % block_values(*e.table_blocks))
      throw Error("embedding: a table in " + std::string(block_type_name(*e.table_blocks)) +
                  " blocks needs dim a multiple of " + std::to_string(block_values(*e.table_blocks)));
    const uint64_t bytes = block_weight_bytes(*e.table_blocks, e.vocab, e.dim);
    if (!table.alloc || table.size < bytes)
      throw Error("embedding: the table in " + std::string(block_type_name(*e.table_blocks)) + " blocks needs " +
                  std::to_string(bytes) + " bytes but its view holds " + std::to_string(table.size));
    if (bytes > ctx_.capabilities().max_storage_buffer_range)
      throw Error("embedding: a table in blocks larger than one binding of device '" + ctx_.capabilities().name + "'");
  } else {
    need(table, uint64_t(e.vocab) * e.dim, "embedding", "table");
  }
  need(out_view, uint64_t(e.rows) * e.dim, "embedding", "out");
  if (pe) {
    const uint64_t first = step ? step->max_step : e.position_offset;  // the last first position
    const uint64_t last = first + std::min(e.rows, e.seq_len);
    if (last > e.positions)
      throw Error("embedding: positions up to " + std::to_string(last) + " are needed but the positional table has " +
                  std::to_string(e.positions));
    need(*pe, uint64_t(e.positions) * e.dim, "embedding", "positional table", DType::F32);
  }
  if (step) need_step(*step, "embedding");
  if (position_shift) {
    if (!pe) throw Error("embedding: a position shift needs the positional table");
    need(*position_shift, (e.rows + e.seq_len - 1) / e.seq_len, "embedding", "position shift", DType::F32);  // uint32
  }
  if (e.types) {
    if (!type_ids || !type_table) throw Error("embedding: token types need their ids and their table");
    need(*type_ids, e.rows, "embedding", "type ids", DType::F32);  // uint32
    need(*type_table, uint64_t(e.types) * e.dim, "embedding", "token type table", DType::F32);
  } else if (type_ids || type_table) {
    throw Error("embedding: type ids or a type table given without Embedding::types");
  }
  struct {
    uint32_t rows, vocab, dim, seq_len, position_offset, positional;
    float scale;
    uint32_t positions_from_step;
    uint32_t first_id, id_count, last_part, table_base;
    uint32_t shifted, types;
  } push{e.rows, e.vocab, e.dim, e.seq_len, e.position_offset, pe ? 1u : 0u, e.scale, step ? 1u : 0u, 0, 0, 0, 0,
         position_shift ? 1u : 0u, e.types};
  static_assert(sizeof push == 56, "matches Push in shaders/embedding.comp");
  Kernel k = kernel("embedding.comp", e.table_blocks ? ops::block_defines(*e.table_blocks, ctx_.capabilities()) : Defines{}, 8, sizeof push);
  const BufferView tids = type_ids ? *type_ids : ids, ttable = type_table ? *type_table : ids;  // (placeholders: not read)
  if (e.table_blocks) {  // the whole table one binding (checked above), its rows from block 0
    const Placed whole = place(table, "embedding");
    if (whole.base) throw Error("embedding: a table in blocks must start at a descriptor-aligned offset");
    push.first_id = 0, push.id_count = e.vocab, push.last_part = 1, push.table_base = 0;
    cl.dispatch(k, ops::grid(ops::ceil_div(uint64_t(e.rows) * e.dim, 256)),
                {in(ids), in(whole.view), in(pe ? *pe : ids), out(out_view), in(step ? step->state : ids),
                 in(position_shift ? *position_shift : ids), in(tids), in(ttable)},
                push, std::string("embedding ") + block_type_name(*e.table_blocks));
    return;
  }
  // A table larger than one binding (a 50k-token embedding in fp32 on a device that binds
  // 128 MiB) is read in parts of whole rows, a dispatch each: each writes the rows whose
  // ids fall in its part (the last also those outside the vocabulary).
  const uint64_t row_bytes = uint64_t(e.dim) * dtype_bytes(dtype_);
  const uint64_t range = ctx_.capabilities().max_storage_buffer_range;
  const uint32_t per_part = uint32_t(std::min<uint64_t>(e.vocab, std::max<uint64_t>(1, (range - 256) / row_bytes)));
  for (uint32_t first = 0; first < e.vocab; first += per_part) {
    const uint32_t count = std::min(per_part, e.vocab - first);
    const Placed part = place({table.alloc, table.offset + first * row_bytes, count * row_bytes}, "embedding");
    push.first_id = first;
    push.id_count = count;
    push.last_part = first + count == e.vocab ? 1u : 0u;
    push.table_base = part.base;
    cl.dispatch(k, ops::grid(ops::ceil_div(uint64_t(e.rows) * e.dim, 256)),
                {in(ids), in(part.view), in(pe ? *pe : ids), out(out_view), in(step ? step->state : ids),
                 in(position_shift ? *position_shift : ids), in(tids), in(ttable)},
                push,
                "embedding");
  }
}

}  // namespace vkf
