#version 450
// out[r, c] = table[ids[r], c] * scale + pe[position_offset + r % seq_len - shift[r / seq_len], c]
//            (+ type_table[type_ids[r], c], with pc.types: BERT's token types)
// (shift: each sequence's left padding, with FLAG_SHIFTED; positions below 0 take row 0:
// the padding's own rows, which nothing reads).
// The positional table is computed on the host in double precision: GPU sin/cos of
// large arguments differ between vendors, and PyTorch's table is exact to fp32.
#extension GL_GOOGLE_include_directive : require
#include "types.glsl"

layout(local_size_x = 256) in;
#include "grid.glsl"  // after the local size: it reads gl_WorkGroupSize
layout(std430, set = 0, binding = 0) readonly buffer Ids { uint ids[]; };
#ifndef QTYPE
layout(std430, set = 0, binding = 1) readonly buffer Table { store_t table[]; };
#endif
layout(std430, set = 0, binding = 2) readonly buffer Pe { float pe[]; };  // fp32 always
layout(std430, set = 0, binding = 3) writeonly buffer Out { store_t result[]; };
#define STEP_BINDING 4
#include "step.glsl"
layout(std430, set = 0, binding = 5) readonly buffer Shift { uint position_shift[]; };  // [rows / seq_len], pc.shifted
layout(std430, set = 0, binding = 6) readonly buffer TypeIds { uint type_ids[]; };      // [rows], pc.types
layout(std430, set = 0, binding = 7) readonly buffer TypeTable { float type_table[]; };  // [types, dim] fp32, pc.types

layout(push_constant) uniform Push {
  uint rows, vocab, dim, seq_len, position_offset, positional;
  float scale;
  uint positions_from_step;  // 1: the first position is the decode step state's position
  // The bound part of the table: rows [first_id, first_id + id_count) from element table_base
  // (a table larger than one binding is read in parts, a dispatch each); last_part: the
  // part that also writes the rows of ids outside the vocabulary.
  uint first_id, id_count, last_part, table_base;
  uint shifted;  // 1: each sequence's positions start position_shift[sequence] earlier
  uint types;    // rows of type_table (0: no token types); a type id past them poisons
} pc;
#ifdef QTYPE
// QTYPE (host: Embedding::table_blocks): the table in blocks at binding 1 (blocks.glsl),
// a value of a row at a time, d (code - offset) (+ m) as dequantize_blocks gives it.
#define Q_ROW_VALUES pc.dim
#include "blocks.glsl"
#define TABLE_AT(row, c) block_value(row, c, pc.vocab * (pc.dim / 32u))
#else
#define TABLE_AT(row, c) float(table[pc.table_base + (row) * pc.dim + (c)])
#endif

void main() {
  uint e = flat_index();
  if (e >= pc.rows * pc.dim) return;
  uint r = e / pc.dim, c = e % pc.dim;
  uint id = ids[r];
  const bool mine = id >= pc.first_id && id - pc.first_id < pc.id_count;
  if (!mine && !(id >= pc.vocab && pc.last_part != 0u)) return;  // another part's row
  // The host rejects bad ids; a bad id that slips through reads nothing and poisons.
  float v = mine ? TABLE_AT(id - pc.first_id, c) * pc.scale : uintBitsToFloat(0x7fc00000u);
  const uint offset = pc.positions_from_step != 0u ? step_state[DECODE_POSITION_WORD] : pc.position_offset;
  if (pc.positional != 0u) {
    uint position = offset + r % pc.seq_len;
    if (pc.shifted != 0u) {
      const uint shift = position_shift[r / pc.seq_len];
      position = position >= shift ? position - shift : 0u;
    }
    v += pe[position * pc.dim + c];
  }
  if (pc.types != 0u) {
    const uint type = type_ids[r];
    v += type < pc.types ? type_table[type * pc.dim + c] : uintBitsToFloat(0x7fc00000u);
  }
  result[e] = store_t(v);
}
